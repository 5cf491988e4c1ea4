from __future__ import annotations

import asyncio
import math
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
import pytest_asyncio
from aiohttp import web

from cairn_embeddings import (
    CircuitBreakerEmbedder,
    EmbedderUnavailable,
    EmbeddingProviderError,
    OpenAICompatibleEmbedder,
)
from cairn_embeddings.transport import ProviderTransport, close_shared_transport

DIM = 8


@dataclass
class FakeProvider:
    """A local stand-in for a remote OpenAI-compatible server; ``mode`` picks its behaviour."""

    base_url: str = ""
    mode: str = "ok"
    requests: list[dict[str, Any]] = field(default_factory=list)
    auth: list[str | None] = field(default_factory=list)
    release: asyncio.Event = field(default_factory=asyncio.Event)

    @staticmethod
    def raw_vector(text: str, dim: int = DIM) -> list[float]:
        return [float(len(text) + 1)] + [float(i + 1) for i in range(dim - 1)]

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append(body)
        self.auth.append(request.headers.get("Authorization"))
        if self.mode == "error":
            return web.json_response({"error": {"message": "overloaded"}}, status=500)
        if self.mode == "slow":
            await self.release.wait()
        if self.mode == "malformed":
            return web.Response(text='{"data": [{"index": "x"}]}', content_type="application/json")
        dim = DIM + 1 if self.mode == "wrong_dim" else DIM
        data = [
            {"object": "embedding", "index": i, "embedding": self.raw_vector(text, dim)}
            for i, text in enumerate(body["input"])
        ]
        if self.mode == "missing_index":
            data = data[1:]
        # Reversed on purpose: clients must order by "index", not by position.
        return web.json_response({"object": "list", "data": data[::-1], "model": body["model"]})


@pytest_asyncio.fixture
async def provider() -> AsyncIterator[FakeProvider]:
    fake = FakeProvider()
    app = web.Application()
    app.router.add_post("/v1/embeddings", fake.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    fake.base_url = f"http://{host}:{port}/v1"
    yield fake
    fake.release.set()
    await runner.cleanup()


@pytest_asyncio.fixture(autouse=True)
async def _shared_transport_closed() -> AsyncIterator[None]:
    # Embedders built without a transport use the process's shared one: close its session with the test's loop.
    yield
    await close_shared_transport()


@pytest_asyncio.fixture
async def client(provider: FakeProvider) -> AsyncIterator[OpenAICompatibleEmbedder]:
    # Real retries, short pauses: the suite does not sleep through production backoffs.
    fast = ProviderTransport(backoff_initial_s=0.01, backoff_max_s=0.05)
    embedder = OpenAICompatibleEmbedder(
        provider.base_url, "sk-test", "text-embedding-3-small", DIM, timeout=5, transport=fast
    )
    yield embedder
    await embedder.close()
    await fast.close()


def _unit(vector: list[float]) -> list[float]:
    norm = math.sqrt(sum(x * x for x in vector))
    return [x / norm for x in vector]


class TestOpenAICompatibleEmbedder:
    @pytest.mark.asyncio
    async def test_success_orders_by_index_and_normalises(
        self, provider: FakeProvider, client: OpenAICompatibleEmbedder
    ) -> None:
        texts = ["a", "bbb", "cc"]
        vectors = await client.embed(texts)
        assert np.allclose(vectors, [_unit(FakeProvider.raw_vector(t)) for t in texts])
        assert provider.requests == [{"model": "text-embedding-3-small", "input": texts}]
        assert provider.auth == ["Bearer sk-test"]
        assert client.name == "openai:text-embedding-3-small"
        assert client.dim == DIM

    @pytest.mark.asyncio
    async def test_large_inputs_are_split_into_batches(self, provider: FakeProvider) -> None:
        embedder = OpenAICompatibleEmbedder(provider.base_url, "sk-test", "m", DIM, batch_size=2)
        texts = ["a", "bb", "ccc", "dddd", "eeeee"]
        try:
            vectors = await embedder.embed(texts)
        finally:
            await embedder.close()
        assert [len(r["input"]) for r in provider.requests] == [2, 2, 1]
        assert np.allclose(vectors, [_unit(FakeProvider.raw_vector(t)) for t in texts])

    @pytest.mark.asyncio
    async def test_empty_input_makes_no_request(
        self, provider: FakeProvider, client: OpenAICompatibleEmbedder
    ) -> None:
        assert await client.embed([]) == []
        assert provider.requests == []

    @pytest.mark.asyncio
    async def test_wrong_dimension_is_an_error(
        self, provider: FakeProvider, client: OpenAICompatibleEmbedder
    ) -> None:
        provider.mode = "wrong_dim"
        with pytest.raises(EmbeddingProviderError, match="dimension 9, expected 8"):
            await client.embed(["a"])

    @pytest.mark.asyncio
    async def test_http_500_is_an_error(
        self, provider: FakeProvider, client: OpenAICompatibleEmbedder
    ) -> None:
        provider.mode = "error"
        with pytest.raises(EmbeddingProviderError, match="HTTP 500") as info:
            await client.embed(["a"])
        assert info.value.status == 500

    @pytest.mark.asyncio
    async def test_timeout_is_an_error(self, provider: FakeProvider) -> None:
        provider.mode = "slow"
        embedder = OpenAICompatibleEmbedder(provider.base_url, "sk-test", "m", DIM, timeout=0.2)
        try:
            with pytest.raises(EmbeddingProviderError, match="timed out"):
                await embedder.embed(["a"])
        finally:
            await embedder.close()

    @pytest.mark.asyncio
    @pytest.mark.parametrize("mode", ["malformed", "missing_index"])
    async def test_malformed_body_is_an_error(
        self, provider: FakeProvider, client: OpenAICompatibleEmbedder, mode: str
    ) -> None:
        provider.mode = mode
        with pytest.raises(EmbeddingProviderError):
            await client.embed(["a", "b"])

    @pytest.mark.asyncio
    async def test_connection_refused_is_an_error(self) -> None:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        embedder = OpenAICompatibleEmbedder(f"http://127.0.0.1:{port}/v1", "sk-test", "m", DIM, timeout=2)
        try:
            with pytest.raises(EmbeddingProviderError, match="failed"):
                await embedder.embed(["a"])
        finally:
            await embedder.close()


def client_attempts(client: OpenAICompatibleEmbedder) -> int:
    return client.transport.max_attempts


def state_of(breaker: CircuitBreakerEmbedder) -> str:
    # Read through a function so mypy does not narrow the property across awaits.
    return breaker.state


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class TestBreakerOverHttp:
    @pytest.mark.asyncio
    async def test_opens_after_failures_then_recovers(
        self, provider: FakeProvider, client: OpenAICompatibleEmbedder
    ) -> None:
        clock = FakeClock()
        breaker = CircuitBreakerEmbedder(client, failure_threshold=3, reset_after_s=30, clock=clock)
        provider.mode = "error"
        for _ in range(3):
            with pytest.raises(EmbedderUnavailable) as info:
                await breaker.embed(["a"])
            assert info.value.reason == "provider_error"
        assert state_of(breaker) == "open"

        with pytest.raises(EmbedderUnavailable) as info:
            await breaker.embed(["a"])
        assert info.value.reason == "circuit_open"
        attempts = client_attempts(client)
        # Each failed call retried (the transport's attempts); the open circuit did not call the provider.
        assert len(provider.requests) == 3 * attempts

        clock.now += 30
        assert state_of(breaker) == "half_open"
        provider.mode = "ok"
        assert len(await breaker.embed(["a"])) == 1
        assert state_of(breaker) == "closed"
        assert len(provider.requests) == 3 * attempts + 1
