"""Exceptions raised by embedders."""

from __future__ import annotations

__all__ = ["EmbedderUnavailable", "EmbeddingError", "EmbeddingProviderError", "EmbeddingRateLimited"]


class EmbeddingError(Exception):
    """Base class of every error raised by this package."""


class EmbeddingProviderError(EmbeddingError):
    """The embedding backend failed: HTTP error, timeout, malformed answer, wrong dimension.

    Attributes:
        status: The HTTP status of the failed response, when there was one.
    """

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class EmbeddingRateLimited(EmbeddingProviderError):
    """The provider kept answering 429: back-pressure, not a broken provider (the breaker ignores it).

    Attributes:
        retry_after_s: The provider's last `Retry-After`, when it gave one.
    """

    def __init__(self, message: str, *, retry_after_s: float | None) -> None:
        super().__init__(message, status=429)
        self.retry_after_s = retry_after_s


class EmbedderUnavailable(EmbeddingError):
    """No embedding can be had right now; callers should degrade (e.g. keyword-only recall).

    Attributes:
        reason: ``"circuit_open"`` when the circuit breaker rejected the call without trying,
            ``"provider_error"`` when the provider was tried and failed, ``"provider_rate_limited"``
            when it kept answering 429.
        retry_after_s: Seconds until the breaker lets a trial call through, when known.
    """

    def __init__(self, reason: str, *, retry_after_s: float | None = None) -> None:
        super().__init__(f"embedder unavailable: {reason}")
        self.reason = reason
        self.retry_after_s = retry_after_s
