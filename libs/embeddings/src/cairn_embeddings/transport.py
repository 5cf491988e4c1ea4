"""The one HTTP client a process uses for every outbound provider call (embeddings, compilers).

One `aiohttp` session per process (connection pooling, one place to close), bounded retries with
exponential backoff that honours `Retry-After`, and bounded response bodies. Callers get the final
status and body; a 429 that outlasts the retries is reported as such (`ProviderRateLimited`), so
callers can treat it as back-pressure rather than as a broken provider.
"""

from __future__ import annotations

import asyncio
import email.utils
import time
from dataclasses import dataclass
from typing import Any

import aiohttp
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential_jitter,
)

__all__ = [
    "ProviderRateLimited",
    "ProviderResponse",
    "ProviderResponseTooLarge",
    "ProviderTransport",
    "ProviderTransportError",
    "shared_transport",
]

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})


class ProviderTransportError(Exception):
    """The provider could not be reached, timed out, or kept answering a retryable error status."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class ProviderRateLimited(ProviderTransportError):
    """Still 429 after the retries: back-pressure. `retry_after_s` is the provider's last hint."""

    def __init__(self, message: str, *, retry_after_s: float | None) -> None:
        super().__init__(message, status=429)
        self.retry_after_s = retry_after_s


class ProviderResponseTooLarge(ProviderTransportError):
    """The body was longer than the caller's bound; it was not read further."""


@dataclass(frozen=True)
class ProviderResponse:
    status: int
    body: bytes


class _Retryable(Exception):
    def __init__(self, status: int | None, retry_after_s: float | None, cause: str) -> None:
        super().__init__(cause)
        self.status = status
        self.retry_after_s = retry_after_s


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a `Retry-After` header (delta-seconds or an HTTP date), or None."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


class ProviderTransport:
    """Bounded-retry JSON POSTs over one shared session.

    Args:
        max_attempts: Tries per call, the first included (429, 5xx, timeouts and connection errors retry).
        backoff_initial_s: First backoff; doubles per attempt, with jitter.
        backoff_max_s: No wait is longer, not even one a `Retry-After` asks for (the caller's own
            deadline is worth more than a provider's hint); a longer hint ends the retries instead.
    """

    def __init__(
        self, *, max_attempts: int = 3, backoff_initial_s: float = 0.5, backoff_max_s: float = 8.0
    ) -> None:
        self.max_attempts = max_attempts
        self.backoff_initial_s = backoff_initial_s
        self.backoff_max_s = backoff_max_s
        # `multiplier`, not the deprecated `initial` (which warns).
        self._backoff = wait_exponential_jitter(
            multiplier=backoff_initial_s, max=backoff_max_s, jitter=backoff_initial_s
        )
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.requests_sent = 0

    def _client(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        # A session belongs to the loop it was made in (a process normally has one).
        if self._session is None or self._session.closed or self._loop is not loop:
            self._session = aiohttp.ClientSession()
            self._loop = loop
        return self._session

    def _worth_retrying(self, exc: BaseException) -> bool:
        # A provider asking for a longer pause than we would sleep ends the retries: back-pressure.
        if not isinstance(exc, _Retryable):
            return False
        return exc.retry_after_s is None or exc.retry_after_s <= self.backoff_max_s

    def _wait(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        hinted = exc.retry_after_s if isinstance(exc, _Retryable) else None
        if hinted is not None:
            return min(hinted, self.backoff_max_s)
        return float(self._backoff(state))

    async def post_json(
        self,
        url: str,
        payload: Any,
        *,
        headers: dict[str, str],
        timeout_s: float,
        max_response_bytes: int,
    ) -> ProviderResponse:
        """POST `payload` as JSON; retry what is worth retrying; return the final non-retryable answer.

        Raises:
            ProviderRateLimited: 429 on the last attempt (or a `Retry-After` longer than `backoff_max_s`).
            ProviderResponseTooLarge: the body exceeded `max_response_bytes`.
            ProviderTransportError: timeouts, connection failures or 5xx on every attempt.
        """
        timeout = aiohttp.ClientTimeout(total=timeout_s)
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.max_attempts),
            wait=self._wait,
            retry=retry_if_exception(self._worth_retrying),
            reraise=True,
        )
        try:
            async for attempt in retrying:
                with attempt:
                    return await self._once(url, payload, headers, timeout, max_response_bytes)
        except _Retryable as exc:
            if exc.status == 429:
                raise ProviderRateLimited(
                    f"provider answered HTTP 429 after {self.max_attempts} attempts",
                    retry_after_s=exc.retry_after_s,
                ) from None
            raise ProviderTransportError(str(exc), status=exc.status) from None
        raise AssertionError("unreachable: tenacity either returns or raises")  # pragma: no cover

    async def _once(
        self,
        url: str,
        payload: Any,
        headers: dict[str, str],
        timeout: aiohttp.ClientTimeout,
        max_bytes: int,
    ) -> ProviderResponse:
        self.requests_sent += 1
        try:
            async with self._client().post(url, json=payload, headers=headers, timeout=timeout) as resp:
                if resp.status in RETRY_STATUSES:
                    retry_after = parse_retry_after(resp.headers.get("Retry-After"))
                    # The body is not echoed: providers put request details (and sometimes keys) there.
                    raise _Retryable(resp.status, retry_after, f"provider answered HTTP {resp.status}")
                declared = resp.content_length
                if declared is not None and declared > max_bytes:
                    raise ProviderResponseTooLarge(
                        f"provider response of {declared} bytes is over the {max_bytes}-byte bound",
                        status=resp.status,
                    )
                body = await resp.content.read(max_bytes + 1)
                if len(body) > max_bytes:
                    raise ProviderResponseTooLarge(
                        f"provider response is over the {max_bytes}-byte bound", status=resp.status
                    )
                return ProviderResponse(resp.status, body)
        except TimeoutError:
            raise _Retryable(None, None, f"request to {url} timed out") from None
        except aiohttp.ClientError as exc:
            raise _Retryable(None, None, f"request to {url} failed: {type(exc).__name__}") from None

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


_shared: ProviderTransport | None = None


def shared_transport() -> ProviderTransport:
    """The process's transport (created on first use; `close_shared_transport` on shutdown)."""
    global _shared
    if _shared is None:
        _shared = ProviderTransport()
    return _shared


async def close_shared_transport() -> None:
    global _shared
    if _shared is not None:
        await _shared.close()
        _shared = None
