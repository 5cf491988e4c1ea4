"""Typed exceptions of the SDK: one class per stable error code, each carrying `code`, `status`, `message`.

A reply the gateway rendered as `{"error": {"code", "message", "status"}}` becomes the class registered for
its code (an unknown code becomes `CairnAPIError`), so callers switch on types or on `code`, never on text.
Transport failures are `CairnConnectionError` (the request may not have reached the gateway) and
`CairnTimeout` (no answer in time).
"""

from __future__ import annotations

from typing import Any, ClassVar

from cairn_contracts.errors import ErrorBody, ErrorCode


class CairnClientError(Exception):
    """Base of every exception the SDK raises."""


class CairnConnectionError(CairnClientError):
    """The gateway could not be reached (refused, DNS, reset before an answer)."""


class CairnTimeout(CairnConnectionError):
    """The gateway did not answer within the configured timeout."""


class CairnAPIError(CairnClientError):
    """The gateway answered with an error envelope.

    Attributes:
        code: the stable snake_case error code (`quota_exceeded`, `not_found`, ...).
        status: the HTTP status.
        message: the human-readable message.
        retry_after: seconds the server asked to wait (`Retry-After`), if it sent one.
    """

    codes: ClassVar[tuple[str, ...]] = ()

    def __init__(self, code: str, message: str, status: int, retry_after: float | None = None) -> None:
        super().__init__(f"{code} ({status}): {message}")
        self.code = code
        self.message = message
        self.status = status
        self.retry_after = retry_after

    def body(self) -> ErrorBody:
        return ErrorBody(code=self.code, message=self.message, status=self.status)

    def to_dict(self) -> dict[str, Any]:
        """The error envelope, as the gateway sent it."""
        return {"error": self.body().model_dump()}


class BadRequest(CairnAPIError):
    codes = (ErrorCode.bad_request,)


class InvalidRequest(CairnAPIError):
    """422: the request failed validation; `code` names the rule (text_too_long, invalid_query, ...)."""

    codes = (
        ErrorCode.validation_error,
        ErrorCode.invalid_json,
        ErrorCode.text_too_long,
        ErrorCode.content_too_large,
        ErrorCode.invalid_session_id,
        ErrorCode.invalid_project_id,
        ErrorCode.invalid_expiry,
        ErrorCode.invalid_query,
        ErrorCode.query_too_long,
        ErrorCode.no_identifier,
        ErrorCode.subject_id_unresolvable,
        ErrorCode.impersonation_tenant_required,
        ErrorCode.invalid_memory_id,
        ErrorCode.invalid_recall_id,
        ErrorCode.invalid_article_ids,
        ErrorCode.too_many_article_ids,
        ErrorCode.not_surfaced,
        ErrorCode.invalid_idempotency_key,
    )


class Unauthenticated(CairnAPIError):
    codes = (ErrorCode.unauthenticated, ErrorCode.invalid_scope)


class Forbidden(CairnAPIError):
    codes = (ErrorCode.forbidden,)


class NotFound(CairnAPIError):
    codes = (ErrorCode.not_found,)


class Conflict(CairnAPIError):
    codes = (
        ErrorCode.conflict,
        ErrorCode.already_exists,
        ErrorCode.ambiguous_resolution,
        ErrorCode.already_graduated,
        ErrorCode.idempotency_key_in_progress,
    )


class QuotaExceeded(CairnAPIError):
    """422: the subject's live-memory quota is full; forget or supersede before writing more."""

    codes = (ErrorCode.quota_exceeded,)


class IdempotencyKeyReused(CairnAPIError):
    """422: this Idempotency-Key was already used with a different request body."""

    codes = (ErrorCode.idempotency_key_reused,)


class RateLimited(CairnAPIError):
    """429 rate_limited: the key's write bucket is empty; `retry_after` says for how long."""

    codes = (ErrorCode.rate_limited,)


class BudgetExceeded(CairnAPIError):
    """429 budget_exceeded: the tenant's hourly promotion budget is spent (not worth a quick retry)."""

    codes = (ErrorCode.budget_exceeded,)


class ServiceUnavailable(CairnAPIError):
    codes = (ErrorCode.service_unavailable, ErrorCode.upstream_timeout, ErrorCode.gate_unavailable)


class ServerError(CairnAPIError):
    codes = (ErrorCode.internal_error,)


_BY_CODE: dict[str, type[CairnAPIError]] = {
    str(code): cls
    for cls in (
        BadRequest,
        InvalidRequest,
        Unauthenticated,
        Forbidden,
        NotFound,
        Conflict,
        QuotaExceeded,
        IdempotencyKeyReused,
        RateLimited,
        BudgetExceeded,
        ServiceUnavailable,
        ServerError,
    )
    for code in cls.codes
}


def error_for(code: str, message: str, status: int, retry_after: float | None = None) -> CairnAPIError:
    """The typed exception for an error envelope (an unregistered code keeps the base class)."""
    cls = _BY_CODE.get(code)
    if cls is None:
        cls = ServerError if status >= 500 else CairnAPIError
    return cls(code, message, status, retry_after)
