"""What the sync and async clients share: configuration, request building, response parsing, retry policy."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import httpx
from pydantic import BaseModel, SecretStr, TypeAdapter
from tenacity import (
    RetryCallState,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential_jitter,
)

from cairn_client.errors import (
    CairnAPIError,
    CairnConnectionError,
    CairnTimeout,
    RateLimited,
    ServiceUnavailable,
    error_for,
)
from cairn_client.settings import ClientSettings

T = TypeVar("T")

USER_AGENT = "cairn-client/0.1"
IDEMPOTENCY_HEADER = "Idempotency-Key"


@dataclass(frozen=True)
class Call(Generic[T]):
    """One REST operation: what to send and how to read the answer."""

    method: str
    path: str
    parse: Callable[[dict[str, Any]], T]
    json: Any = None
    params: dict[str, Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    write: bool = False  # a POST that writes: carries an Idempotency-Key


def data_as(kind: Any) -> Callable[[dict[str, Any]], Any]:
    """A parser for `{"data": ...}` as `kind` (a model or a type such as `list[Memory]`)."""
    adapter: TypeAdapter[Any] = TypeAdapter(kind)
    return lambda body: adapter.validate_python(body["data"])


def envelope_as(kind: Any) -> Callable[[dict[str, Any]], Any]:
    """A parser for the whole `{"data", "meta"}` envelope as `kind` (a DataEnvelope[...] model)."""
    adapter: TypeAdapter[Any] = TypeAdapter(kind)
    return lambda body: adapter.validate_python(body)


def dump(model: BaseModel) -> dict[str, Any]:
    """A request body: defaults left out so the server applies its own."""
    return model.model_dump(mode="json", exclude_unset=True)


def clean(params: dict[str, Any]) -> dict[str, Any]:
    """Query parameters without the ones left unset; booleans as the gateway reads them."""
    out: dict[str, Any] = {}
    for name, value in params.items():
        if value is None:
            continue
        out[name] = ("true" if value else "false") if isinstance(value, bool) else value
    return out


def secret(key: str | SecretStr | None) -> SecretStr | None:
    """Keys are accepted as plain strings (the public API) and kept as SecretStr (redacted in repr)."""
    return key if key is None or isinstance(key, SecretStr) else SecretStr(key)


@dataclass(frozen=True)
class Config:
    """Resolved client configuration (explicit arguments first, then `CAIRN_*` environment variables)."""

    base_url: str
    api_key: SecretStr | None  # never in a repr or a log line
    timeout: httpx.Timeout
    max_retries: int
    max_retry_wait: float
    impersonate_tenant: str | None

    @classmethod
    def resolve(
        cls,
        base_url: str | None,
        api_key: str | SecretStr | None,
        timeout: float | None,
        max_retries: int | None,
        impersonate_tenant: str | None,
    ) -> Config:
        env = ClientSettings()
        return cls(
            base_url=(base_url or env.gateway_url).rstrip("/"),
            api_key=secret(api_key) if api_key is not None else env.api_key,
            timeout=httpx.Timeout(
                timeout if timeout is not None else env.timeout_seconds,
                connect=min(env.connect_timeout_seconds, timeout or env.connect_timeout_seconds),
            ),
            max_retries=max(0, max_retries if max_retries is not None else env.max_retries),
            max_retry_wait=env.max_retry_wait_seconds,
            impersonate_tenant=impersonate_tenant,
        )

    def headers(self) -> dict[str, str]:
        headers = {"User-Agent": USER_AGENT, "Accept": "application/json"}
        if self.api_key and self.api_key.get_secret_value():
            headers["Authorization"] = f"Bearer {self.api_key.get_secret_value()}"
        if self.impersonate_tenant:
            headers["X-Impersonate-Tenant"] = self.impersonate_tenant
        return headers


def request_headers(call: Call[Any], idempotency_key: str | None) -> dict[str, str]:
    headers = dict(call.headers)
    if call.write:
        headers[IDEMPOTENCY_HEADER] = idempotency_key or str(uuid.uuid4())
    return headers


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("Retry-After")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


def parse_response(call: Call[T], response: httpx.Response) -> T:
    """The call's typed result, or the typed exception for the error envelope."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if response.is_success and isinstance(body, dict) and "data" in body:
        return call.parse(body)
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and isinstance(error.get("code"), str):
        raise error_for(
            error["code"], str(error.get("message", "")), response.status_code, _retry_after(response)
        )
    code = "internal_error" if response.status_code >= 500 else "bad_response"
    raise error_for(
        code,
        f"unexpected {response.status_code} answer from {call.method} {call.path}",
        response.status_code,
        _retry_after(response),
    )


def transport_error(exc: httpx.TransportError, base_url: str) -> CairnConnectionError:
    if isinstance(exc, httpx.TimeoutException):
        return CairnTimeout(f"no answer from {base_url} in time ({type(exc).__name__})")
    return CairnConnectionError(f"cannot reach the Cairn gateway at {base_url}: {exc}")


def _retryable(exc: BaseException) -> bool:
    # A connect failure never reached the server; 429 rate_limited and 503 are transient by definition.
    # budget_exceeded is a 429 too, but an hourly budget does not come back in seconds.
    if isinstance(exc, CairnConnectionError) and not isinstance(exc, CairnTimeout):
        return True
    return isinstance(exc, RateLimited | ServiceUnavailable) and exc.status in (429, 503)


class RetryPolicy:
    """Bounded retry: `max_retries` more attempts, waiting `Retry-After` when the server sends one
    (never longer than `max_wait`: a longer ask is raised at once), else exponential backoff with jitter."""

    def __init__(self, max_retries: int, max_wait: float) -> None:
        self.max_retries = max_retries
        self.max_wait = max_wait
        self._backoff = wait_exponential_jitter(multiplier=0.1, max=min(5.0, max_wait), jitter=0.1)

    def _should_retry(self, exc: BaseException) -> bool:
        if not _retryable(exc):
            return False
        retry_after = exc.retry_after if isinstance(exc, CairnAPIError) else None
        return retry_after is None or retry_after <= self.max_wait

    def wait(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, CairnAPIError) and exc.retry_after is not None:
            return min(exc.retry_after, self.max_wait)
        return float(self._backoff(state))

    def kwargs(self) -> dict[str, Any]:
        """Arguments for tenacity's `Retrying` / `AsyncRetrying`."""
        return {
            "retry": retry_if_exception(self._should_retry),
            "stop": stop_after_attempt(self.max_retries + 1),
            "wait": self.wait,
            "reraise": True,
        }
