"""Cairn's typed Python SDK: `CairnClient` (sync) and `AsyncCairnClient` over the REST API."""

from cairn_client._calls import History, KnowledgeHits, Memories, RecallResult
from cairn_client.client import AsyncCairnClient, CairnClient
from cairn_client.errors import (
    BadRequest,
    BudgetExceeded,
    CairnAPIError,
    CairnClientError,
    CairnConnectionError,
    CairnTimeout,
    Conflict,
    Forbidden,
    IdempotencyKeyReused,
    InvalidRequest,
    NotFound,
    QuotaExceeded,
    RateLimited,
    ServerError,
    ServiceUnavailable,
    Unauthenticated,
)

__all__ = [
    "AsyncCairnClient",
    "BadRequest",
    "BudgetExceeded",
    "CairnAPIError",
    "CairnClient",
    "CairnClientError",
    "CairnConnectionError",
    "CairnTimeout",
    "Conflict",
    "Forbidden",
    "History",
    "IdempotencyKeyReused",
    "InvalidRequest",
    "KnowledgeHits",
    "Memories",
    "NotFound",
    "QuotaExceeded",
    "RateLimited",
    "RecallResult",
    "ServerError",
    "ServiceUnavailable",
    "Unauthenticated",
]
