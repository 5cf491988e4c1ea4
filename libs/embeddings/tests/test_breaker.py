from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from cairn_embeddings import CircuitBreakerEmbedder, EmbedderUnavailable, EmbeddingProviderError


def state_of(breaker: CircuitBreakerEmbedder) -> str:
    # Read through a function so mypy does not narrow the property across awaits.
    return breaker.state


class FakeClock:
    def __init__(self) -> None:
        self.now = 50.0

    def __call__(self) -> float:
        return self.now


class FakeEmbedder:
    name = "fake"
    dim = 2

    def __init__(self) -> None:
        self.fail = False
        self.calls = 0
        self.gate: asyncio.Event | None = None
        self.closed = False

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls += 1
        if self.gate is not None:
            await self.gate.wait()
        if self.fail:
            raise EmbeddingProviderError("down")
        return [[1.0, 0.0] for _ in texts]

    async def close(self) -> None:
        self.closed = True


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def inner() -> FakeEmbedder:
    return FakeEmbedder()


@pytest.fixture
def breaker(inner: FakeEmbedder, clock: FakeClock) -> CircuitBreakerEmbedder:
    return CircuitBreakerEmbedder(inner, failure_threshold=3, reset_after_s=30, clock=clock)


async def _fail(breaker: CircuitBreakerEmbedder, times: int) -> None:
    for _ in range(times):
        with pytest.raises(EmbedderUnavailable, match="provider_error"):
            await breaker.embed(["x"])


class TestCircuitBreakerEmbedder:
    @pytest.mark.asyncio
    async def test_passes_through_when_closed(self, breaker: CircuitBreakerEmbedder) -> None:
        assert await breaker.embed(["a", "b"]) == [[1.0, 0.0], [1.0, 0.0]]
        assert state_of(breaker) == "closed"
        assert (breaker.name, breaker.dim) == ("fake", 2)

    @pytest.mark.asyncio
    async def test_opens_after_threshold_consecutive_failures(
        self, breaker: CircuitBreakerEmbedder, inner: FakeEmbedder
    ) -> None:
        inner.fail = True
        await _fail(breaker, 2)
        assert state_of(breaker) == "closed"
        await _fail(breaker, 1)
        assert state_of(breaker) == "open"
        with pytest.raises(EmbedderUnavailable) as info:
            await breaker.embed(["x"])
        assert info.value.reason == "circuit_open"
        assert info.value.retry_after_s == pytest.approx(30)
        assert inner.calls == 3

    @pytest.mark.asyncio
    async def test_success_resets_the_failure_count(
        self, breaker: CircuitBreakerEmbedder, inner: FakeEmbedder
    ) -> None:
        inner.fail = True
        await _fail(breaker, 2)
        inner.fail = False
        await breaker.embed(["x"])
        inner.fail = True
        await _fail(breaker, 2)
        assert state_of(breaker) == "closed"

    @pytest.mark.asyncio
    async def test_half_open_trial_success_closes(
        self, breaker: CircuitBreakerEmbedder, inner: FakeEmbedder, clock: FakeClock
    ) -> None:
        inner.fail = True
        await _fail(breaker, 3)
        clock.now += 29.9
        assert state_of(breaker) == "open"
        clock.now += 0.1
        assert state_of(breaker) == "half_open"
        inner.fail = False
        await breaker.embed(["x"])
        assert state_of(breaker) == "closed"

    @pytest.mark.asyncio
    async def test_half_open_trial_failure_reopens_for_a_full_period(
        self, breaker: CircuitBreakerEmbedder, inner: FakeEmbedder, clock: FakeClock
    ) -> None:
        inner.fail = True
        await _fail(breaker, 3)
        clock.now += 30
        await _fail(breaker, 1)
        assert state_of(breaker) == "open"
        clock.now += 29
        assert state_of(breaker) == "open"
        clock.now += 1
        assert state_of(breaker) == "half_open"

    @pytest.mark.asyncio
    async def test_half_open_lets_only_one_trial_through(
        self, breaker: CircuitBreakerEmbedder, inner: FakeEmbedder, clock: FakeClock
    ) -> None:
        inner.fail = True
        await _fail(breaker, 3)
        clock.now += 30
        inner.fail = False
        inner.gate = asyncio.Event()
        trial = asyncio.create_task(breaker.embed(["x"]))
        await asyncio.sleep(0)
        with pytest.raises(EmbedderUnavailable, match="circuit_open"):
            await breaker.embed(["y"])
        inner.gate.set()
        assert await trial == [[1.0, 0.0]]
        assert state_of(breaker) == "closed"
        assert inner.calls == 4

    @pytest.mark.asyncio
    async def test_cancelled_trial_frees_the_slot(
        self, breaker: CircuitBreakerEmbedder, inner: FakeEmbedder, clock: FakeClock
    ) -> None:
        inner.fail = True
        await _fail(breaker, 3)
        clock.now += 30
        inner.gate = asyncio.Event()
        trial = asyncio.create_task(breaker.embed(["x"]))
        await asyncio.sleep(0)
        trial.cancel()
        with pytest.raises(asyncio.CancelledError):
            await trial
        inner.gate = None
        inner.fail = False
        assert await breaker.embed(["x"]) == [[1.0, 0.0]]

    @pytest.mark.asyncio
    async def test_other_exceptions_pass_through_uncounted(
        self, breaker: CircuitBreakerEmbedder, inner: FakeEmbedder
    ) -> None:
        async def broken(texts: Sequence[str]) -> list[list[float]]:
            raise ValueError("bug")

        inner.embed = broken  # type: ignore[method-assign]
        for _ in range(5):
            with pytest.raises(ValueError, match="bug"):
                await breaker.embed(["x"])
        assert state_of(breaker) == "closed"

    @pytest.mark.asyncio
    async def test_close_closes_inner(self, breaker: CircuitBreakerEmbedder, inner: FakeEmbedder) -> None:
        await breaker.close()
        assert inner.closed

    def test_rejects_bad_configuration(self, inner: FakeEmbedder) -> None:
        with pytest.raises(ValueError, match="failure_threshold"):
            CircuitBreakerEmbedder(inner, failure_threshold=0)
