"""Envelopes: REST success bodies and the NATS reply contract."""

from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from cairn_contracts.errors import ErrorBody

T = TypeVar("T")

WRITE_ID_HEADER = "Cairn-Write-Id"
"""NATS request header of an idempotent write: the id its row takes, the same on every retry of one
(tenant, subject, Idempotency-Key, request), so a retry after a lost reply finds the row, not a twin."""


class DataEnvelope(BaseModel, Generic[T]):
    """REST success body: `{"data": ..., "meta": {...}}`."""

    data: T
    meta: dict[str, Any] = {}


class Reply(BaseModel):
    """A NATS reply: exactly one of `data` (with optional `meta`) or `error`."""

    data: Any = None
    meta: dict[str, Any] = {}
    error: ErrorBody | None = None


class ListMeta(BaseModel):
    total_count: int
    limit: int
    offset: int
