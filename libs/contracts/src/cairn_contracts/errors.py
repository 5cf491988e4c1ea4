"""Error codes and the error envelope shared by REST and NATS."""

from enum import StrEnum
from typing import ClassVar

from pydantic import BaseModel


class ErrorCode(StrEnum):
    """Stable, snake_case error codes. Clients switch on these; never rename one."""

    bad_request = "bad_request"
    validation_error = "validation_error"
    invalid_json = "invalid_json"
    unauthenticated = "unauthenticated"
    forbidden = "forbidden"
    not_found = "not_found"
    method_not_allowed = "method_not_allowed"
    conflict = "conflict"
    rate_limited = "rate_limited"
    internal_error = "internal_error"
    service_unavailable = "service_unavailable"
    upstream_timeout = "upstream_timeout"
    invalid_scope = "invalid_scope"
    subject_id_unresolvable = "subject_id_unresolvable"
    impersonation_tenant_required = "impersonation_tenant_required"
    no_identifier = "no_identifier"
    ambiguous_resolution = "ambiguous_resolution"
    text_too_long = "text_too_long"
    content_too_large = "content_too_large"
    invalid_session_id = "invalid_session_id"
    invalid_project_id = "invalid_project_id"
    invalid_expiry = "invalid_expiry"
    quota_exceeded = "quota_exceeded"
    invalid_query = "invalid_query"
    query_too_long = "query_too_long"
    budget_exceeded = "budget_exceeded"
    already_exists = "already_exists"
    gate_unavailable = "gate_unavailable"
    not_surfaced = "not_surfaced"
    invalid_recall_id = "invalid_recall_id"
    invalid_article_ids = "invalid_article_ids"
    too_many_article_ids = "too_many_article_ids"
    invalid_memory_id = "invalid_memory_id"
    already_graduated = "already_graduated"
    idempotency_key_reused = "idempotency_key_reused"
    idempotency_key_in_progress = "idempotency_key_in_progress"
    invalid_idempotency_key = "invalid_idempotency_key"
    payload_too_large = "payload_too_large"
    invalid_range = "invalid_range"
    range_too_wide = "range_too_wide"
    payload_undecodable = "payload_undecodable"
    session_turn_limit = "session_turn_limit"
    session_byte_limit = "session_byte_limit"
    project_limit = "project_limit"


class ErrorBody(BaseModel):
    """The body of every error: `{"error": {"code", "message", "status"}}`."""

    code: str
    message: str
    status: int


class ErrorEnvelope(BaseModel):
    error: ErrorBody


class CairnError(Exception):
    """An expected failure with a stable code and HTTP status. Never rendered as a 500."""

    code: ClassVar[ErrorCode] = ErrorCode.internal_error
    status: ClassVar[int] = 500
    default_message: ClassVar[str] = "internal error"

    def __init__(self, message: str | None = None, *, headers: dict[str, str] | None = None) -> None:
        self.message = message or self.default_message
        self.headers = headers or {}
        super().__init__(self.message)

    def body(self) -> ErrorBody:
        return ErrorBody(code=self.code, message=self.message, status=self.status)


class BadRequest(CairnError):
    code, status, default_message = ErrorCode.bad_request, 400, "bad request"


class Unauthenticated(CairnError):
    code, status, default_message = ErrorCode.unauthenticated, 401, "missing or invalid API key"


class Forbidden(CairnError):
    code, status, default_message = ErrorCode.forbidden, 403, "this key's role may not do that"


class NotFound(CairnError):
    code, status, default_message = ErrorCode.not_found, 404, "not found"


class Conflict(CairnError):
    code, status, default_message = ErrorCode.conflict, 409, "conflict"


class AlreadyExists(CairnError):
    code, status, default_message = ErrorCode.already_exists, 409, "already exists"


class PayloadTooLarge(CairnError):
    code, status, default_message = ErrorCode.payload_too_large, 413, "request body too large"


class RateLimited(CairnError):
    code, status, default_message = ErrorCode.rate_limited, 429, "rate limit exceeded"


class InternalError(CairnError):
    code, status, default_message = ErrorCode.internal_error, 500, "internal error"


class ServiceUnavailable(CairnError):
    code, status, default_message = ErrorCode.service_unavailable, 503, "service unavailable"


class UpstreamTimeout(CairnError):
    code, status, default_message = ErrorCode.upstream_timeout, 504, "upstream service timed out"


class InvalidScope(CairnError):
    code, status, default_message = ErrorCode.invalid_scope, 401, "missing or unverifiable scope"


class SubjectUnresolvable(CairnError):
    code, status, default_message = (
        ErrorCode.subject_id_unresolvable,
        422,
        "the key's subject cannot be resolved",
    )


class ImpersonationRequired(CairnError):
    code, status = ErrorCode.impersonation_tenant_required, 422
    default_message = "superadmin requests on this path need an X-Impersonate-Tenant header"


class NoIdentifier(CairnError):
    code, status, default_message = ErrorCode.no_identifier, 422, "give slug, repo_url or name"


class AmbiguousResolution(CairnError):
    code, status, default_message = ErrorCode.ambiguous_resolution, 409, "more than one project matches"


class InvalidProjectId(CairnError):
    code, status, default_message = (
        ErrorCode.invalid_project_id,
        422,
        "project_id is not a project of this tenant",
    )


class QuotaExceeded(CairnError):
    code, status, default_message = ErrorCode.quota_exceeded, 422, "live memory quota reached"


class BudgetExceeded(CairnError):
    code, status, default_message = ErrorCode.budget_exceeded, 429, "promotion budget exhausted"


class GateUnavailable(CairnError):
    code, status = ErrorCode.gate_unavailable, 503
    default_message = "the novelty gate needs embeddings and they are unavailable; nothing was written"


class AlreadyGraduated(CairnError):
    code, status = ErrorCode.already_graduated, 409
    default_message = "this memory already graduated into an article of another scope"


class NotSurfaced(CairnError):
    code, status = ErrorCode.not_surfaced, 422
    default_message = "an article id was not surfaced by this recall; nothing was recorded"


class IdempotencyKeyReused(CairnError):
    code, status = ErrorCode.idempotency_key_reused, 422
    default_message = "this Idempotency-Key was already used with a different request"


class IdempotencyKeyInProgress(CairnError):
    code, status = ErrorCode.idempotency_key_in_progress, 409
    default_message = "a request with this Idempotency-Key is still in flight; retry shortly"


class InvalidIdempotencyKey(CairnError):
    code, status = ErrorCode.invalid_idempotency_key, 422
    default_message = "Idempotency-Key must be 1-255 printable ASCII characters"


class PayloadUndecodable(CairnError):
    code, status = ErrorCode.payload_undecodable, 422
    default_message = "a payload is encrypted with a key this gateway lacks, or was altered"


class ValidationFailed(CairnError):
    """A request body or parameter failed validation; `code` names the rule that failed."""

    status = 422

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.dynamic_code = code

    def body(self) -> ErrorBody:
        return ErrorBody(code=self.dynamic_code, message=self.message, status=self.status)


SPECIFIC_VALIDATION_CODES = frozenset(
    {
        ErrorCode.text_too_long,
        ErrorCode.content_too_large,
        ErrorCode.invalid_session_id,
        ErrorCode.invalid_project_id,
        ErrorCode.invalid_expiry,
        ErrorCode.invalid_query,
        ErrorCode.query_too_long,
        ErrorCode.no_identifier,
        ErrorCode.invalid_recall_id,
        ErrorCode.invalid_article_ids,
        ErrorCode.too_many_article_ids,
        ErrorCode.invalid_memory_id,
    }
)


def validation_code(pydantic_error_types: list[str]) -> str:
    """Map pydantic error types to one stable code: a named rule if one failed, else validation_error.

    Contract validators raise `PydanticCustomError("<error code>", ...)`, so the error type *is* the code.
    """
    for kind in pydantic_error_types:
        if kind in SPECIFIC_VALIDATION_CODES:
            return kind
    if "json_invalid" in pydantic_error_types:
        return ErrorCode.invalid_json
    return ErrorCode.validation_error


class RemoteError(CairnError):
    """An error reply from another service, re-raised unchanged so the gateway invents no new codes."""

    def __init__(self, body: ErrorBody) -> None:
        super().__init__(body.message)
        self.remote = body

    def body(self) -> ErrorBody:
        return self.remote

    @property
    def http_status(self) -> int:
        return self.remote.status
