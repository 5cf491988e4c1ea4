"""The shared provider transport against a real local HTTP server: retries that honour Retry-After, a 429
that is back-pressure (never a breaker failure), bounded response bodies, one session per process."""

from __future__ import annotations

import email.utils
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

import pytest
import pytest_asyncio
from aiohttp import web

from cairn_embeddings import CircuitBreakerEmbedder, EmbedderUnavailable, OpenAICompatibleEmbedder
from cairn_embeddings.errors import EmbeddingProviderError, EmbeddingRateLimited
from cairn_embeddings.transport import (
    ProviderRateLimited,
    ProviderResponseTooLarge,
    ProviderTransport,
    ProviderTransportError,
    parse_retry_after,
    shared_transport,
)

DIM = 4
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass
class Server:
    url: str = ""
    hits: list[float] = field(default_factory=list)  # monotonic arrival times
    script: list[Handler] = field(default_factory=list)  # one handler per request; the last repeats

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.hits.append(time.monotonic())
        handler = self.script[min(len(self.hits), len(self.script)) - 1]
        return await handler(request)


def status(code: int, retry_after: str | None = None) -> Handler:
    async def answer(_: web.Request) -> web.StreamResponse:
        headers = {"Retry-After": retry_after} if retry_after is not None else {}
        return web.json_response({"error": {"message": "no"}}, status=code, headers=headers)

    return answer


async def vectors(request: web.Request) -> web.StreamResponse:
    body = await request.json()
    data = [{"index": i, "embedding": [1.0, 0.0, 0.0, 0.0]} for i, _ in enumerate(body["input"])]
    return web.json_response({"data": data})


def oversized(size: int, *, chunked: bool) -> Handler:
    async def answer(request: web.Request) -> web.StreamResponse:
        if not chunked:
            return web.Response(body=b"x" * size, content_type="application/json")
        response = web.StreamResponse()
        response.enable_chunked_encoding()
        await response.prepare(request)
        for _ in range(size // 1024 + 1):
            await response.write(b"x" * 1024)
        await response.write_eof()
        return response

    return answer


@pytest_asyncio.fixture
async def server() -> AsyncIterator[Server]:
    fake = Server()
    app = web.Application()
    app.router.add_post("/v1/embeddings", fake.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    fake.url = f"http://{host}:{port}/v1"
    yield fake
    await runner.cleanup()


_made: list[ProviderTransport] = []


def transport(max_backoff: float = 2.0) -> ProviderTransport:
    made = ProviderTransport(max_attempts=3, backoff_initial_s=0.01, backoff_max_s=max_backoff)
    _made.append(made)
    return made


@pytest_asyncio.fixture(autouse=True)
async def _transports_closed() -> AsyncIterator[None]:
    # Each test's transports hold an aiohttp session: close it with the test's loop, not at interpreter exit.
    yield
    while _made:
        await _made.pop().close()


async def post(t: ProviderTransport, server: Server, max_bytes: int = 10_000) -> int:
    response = await t.post_json(
        server.url + "/embeddings",
        {"model": "m", "input": ["a"]},
        headers={},
        timeout_s=5,
        max_response_bytes=max_bytes,
    )
    return response.status


class TestRetries:
    async def test_retry_after_seconds_is_honoured(self, server: Server) -> None:
        server.script = [status(429, "1"), vectors]
        assert await post(transport(), server) == 200
        assert len(server.hits) == 2
        assert server.hits[1] - server.hits[0] >= 0.95  # waited what the provider asked

    async def test_retry_after_http_date_is_honoured(self, server: Server) -> None:
        server.script = [status(503, email.utils.formatdate(time.time() + 2, usegmt=True)), vectors]
        assert await post(transport(max_backoff=3), server) == 200
        assert server.hits[1] - server.hits[0] >= 0.9  # an HTTP date has whole-second resolution

    async def test_5xx_then_success(self, server: Server) -> None:
        server.script = [status(500), status(502), vectors]
        assert await post(transport(), server) == 200
        assert len(server.hits) == 3

    async def test_retries_are_bounded(self, server: Server) -> None:
        server.script = [status(500)]
        with pytest.raises(ProviderTransportError) as caught:
            await post(transport(), server)
        assert caught.value.status == 500
        assert len(server.hits) == 3

    async def test_a_persistent_429_is_rate_limited_with_the_hint(self, server: Server) -> None:
        server.script = [status(429, "0.05")]
        with pytest.raises(ProviderRateLimited) as caught:
            await post(transport(), server)
        assert caught.value.retry_after_s == pytest.approx(0.05)
        assert len(server.hits) == 3

    async def test_a_hint_longer_than_we_wait_ends_the_retries(self, server: Server) -> None:
        server.script = [status(429, "120")]
        started = time.monotonic()
        with pytest.raises(ProviderRateLimited) as caught:
            await post(transport(max_backoff=2), server)
        assert time.monotonic() - started < 1.5
        assert caught.value.retry_after_s == 120
        assert len(server.hits) == 1

    async def test_client_errors_are_not_retried(self, server: Server) -> None:
        server.script = [status(401)]
        assert await post(transport(), server) == 401
        assert len(server.hits) == 1

    def test_parse_retry_after(self) -> None:
        assert parse_retry_after("3") == 3
        assert parse_retry_after("-1") == 0
        assert parse_retry_after("soon") is None
        assert parse_retry_after(None) is None
        date = email.utils.formatdate(1_000_100, usegmt=True)
        assert parse_retry_after(date, now=1_000_000) == pytest.approx(100)


class TestBoundedBodies:
    @pytest.mark.parametrize("chunked", [False, True])
    async def test_a_body_over_the_bound_is_refused(self, server: Server, chunked: bool) -> None:
        server.script = [oversized(50_000, chunked=chunked)]
        with pytest.raises(ProviderResponseTooLarge):
            await post(transport(), server, max_bytes=10_000)
        assert len(server.hits) == 1  # not retried

    async def test_a_body_at_the_bound_is_read(self, server: Server) -> None:
        server.script = [oversized(10_000, chunked=False)]
        assert await post(transport(), server, max_bytes=10_000) == 200

    async def test_the_embedder_reports_an_oversized_answer(self, server: Server) -> None:
        server.script = [oversized(5_000, chunked=True)]
        embedder = OpenAICompatibleEmbedder(
            server.url, "sk-x", "m", DIM, transport=transport(), max_response_bytes=1_000
        )
        with pytest.raises(EmbeddingProviderError, match="bound"):
            await embedder.embed(["a"])


class TestBackPressure:
    async def test_429_never_opens_the_breaker(self, server: Server) -> None:
        server.script = [status(429, "0")]
        embedder = OpenAICompatibleEmbedder(server.url, "sk-x", "m", DIM, transport=transport())
        breaker = CircuitBreakerEmbedder(embedder, failure_threshold=2, reset_after_s=60)
        for _ in range(4):
            with pytest.raises(EmbedderUnavailable) as caught:
                await breaker.embed(["a"])
            assert caught.value.reason == "provider_rate_limited"
            assert isinstance(caught.value.__cause__, EmbeddingRateLimited)
        assert breaker.state == "closed"
        server.script = [vectors]
        server.hits.clear()
        assert len(await breaker.embed(["a"])) == 1

    async def test_500s_still_open_it(self, server: Server) -> None:
        server.script = [status(500)]
        embedder = OpenAICompatibleEmbedder(server.url, "sk-x", "m", DIM, transport=transport())
        breaker = CircuitBreakerEmbedder(embedder, failure_threshold=2, reset_after_s=60)
        for _ in range(2):
            with pytest.raises(EmbedderUnavailable):
                await breaker.embed(["a"])
        assert breaker.state == "open"


class TestOneClientPerProcess:
    async def test_embedders_share_the_process_transport(self, server: Server) -> None:
        server.script = [vectors]
        first = OpenAICompatibleEmbedder(server.url, "sk-1", "m", DIM)
        second = OpenAICompatibleEmbedder(server.url, "sk-2", "other", DIM)
        assert first.transport is second.transport is shared_transport()
        await first.embed(["a"])
        await second.embed(["b"])
        assert len(server.hits) == 2

    def test_repr_redacts_the_key(self) -> None:
        embedder = OpenAICompatibleEmbedder("http://127.0.0.1:1/v1", "sk-secret-value", "m", DIM)
        assert "sk-secret-value" not in repr(embedder)
        assert "sk-secret-value" not in str(embedder)
