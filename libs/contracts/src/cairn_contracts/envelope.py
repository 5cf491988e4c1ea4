"""Envelopes: REST success bodies and the NATS reply contract."""

from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from cairn_contracts.errors import ErrorBody

T = TypeVar("T")


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
