"""A circuit breaker in front of an embedder, so a failing provider is not hammered and callers fail fast."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Literal

from cairn_embeddings.breaker_metrics import BREAKERS, OPENED
from cairn_embeddings.errors import EmbedderUnavailable, EmbeddingProviderError, EmbeddingRateLimited
from cairn_embeddings.protocol import Embedder, SupportsClose

__all__ = ["BreakerState", "CircuitBreakerEmbedder"]

BreakerState = Literal["closed", "open", "half_open"]


class CircuitBreakerEmbedder:
    """Wraps an embedder; after ``failure_threshold`` consecutive provider failures it opens.

    While open, ``embed`` raises ``EmbedderUnavailable(reason="circuit_open")`` without calling the
    inner embedder. A 429 (`EmbeddingRateLimited`) is back-pressure and never counts. Once ``reset_after_s`` have passed it is half-open: one trial call goes through
    (concurrent calls are still rejected); success closes the circuit, failure opens it again for
    another ``reset_after_s``. Provider errors surface as ``EmbedderUnavailable(reason="provider_error")``.
    Other exceptions (bugs, cancellation) pass through unchanged and do not count as failures.

    Attributes:
        inner: The wrapped embedder.
    """

    def __init__(
        self,
        inner: Embedder,
        failure_threshold: int = 3,
        reset_after_s: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """Wrap ``inner``.

        Args:
            inner: The embedder to protect.
            failure_threshold: Consecutive failures that open the circuit (at least 1).
            reset_after_s: Seconds the circuit stays open before a trial call.
            clock: Monotonic time source in seconds (injectable for tests).

        Raises:
            ValueError: ``failure_threshold`` below 1 or negative ``reset_after_s``.
        """
        if failure_threshold < 1:
            raise ValueError("failure_threshold must be at least 1")
        if reset_after_s < 0:
            raise ValueError("reset_after_s must not be negative")
        self.inner = inner
        self._threshold = failure_threshold
        self._reset_after_s = reset_after_s
        self._clock = clock
        self._failures = 0
        self._opened_at: float | None = None
        self._trial_in_flight = False
        BREAKERS.track(self)

    @property
    def name(self) -> str:
        """The inner embedder's name."""
        return self.inner.name

    @property
    def dim(self) -> int:
        """The inner embedder's dimension."""
        return self.inner.dim

    @property
    def state(self) -> BreakerState:
        """``"closed"``, ``"open"``, or ``"half_open"`` once ``reset_after_s`` has passed since opening."""
        if self._opened_at is None:
            return "closed"
        if self._clock() - self._opened_at >= self._reset_after_s:
            return "half_open"
        return "open"

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed through the inner embedder unless the circuit is open.

        Args:
            texts: The texts.

        Returns:
            The inner embedder's vectors.

        Raises:
            EmbedderUnavailable: ``reason="circuit_open"`` when rejected without trying,
                ``reason="provider_error"`` when the inner embedder raised ``EmbeddingProviderError``.
        """
        state = self.state
        trial = state == "half_open"
        if state == "open" or (trial and self._trial_in_flight):
            raise EmbedderUnavailable("circuit_open", retry_after_s=self._retry_after())
        if trial:
            self._trial_in_flight = True
        try:
            vectors = await self.inner.embed(texts)
        except EmbeddingRateLimited as exc:
            # Back-pressure: the provider works and asks us to slow down; opening the circuit would turn
            # one busy minute into `reset_after_s` of refusals for every caller.
            raise EmbedderUnavailable("provider_rate_limited", retry_after_s=exc.retry_after_s) from exc
        except EmbeddingProviderError as exc:
            self._record_failure()
            raise EmbedderUnavailable("provider_error", retry_after_s=self._retry_after()) from exc
        finally:
            if trial:
                self._trial_in_flight = False
        self._failures = 0
        self._opened_at = None
        return vectors

    def _record_failure(self) -> None:
        self._failures += 1
        if self._opened_at is not None or self._failures >= self._threshold:
            # A failed half-open trial re-opens for a full period, as does reaching the threshold.
            self._opened_at = self._clock()
            OPENED.inc()

    def _retry_after(self) -> float | None:
        if self._opened_at is None:
            return None
        return max(0.0, self._opened_at + self._reset_after_s - self._clock())

    async def close(self) -> None:
        """Close the inner embedder if it holds resources."""
        if isinstance(self.inner, SupportsClose):
            await self.inner.close()
