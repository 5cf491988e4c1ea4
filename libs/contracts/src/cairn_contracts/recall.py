"""Recall: `POST /api/v1/memory/recall` and the `memory.recalled` hotness event."""

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field
from pydantic_core import PydanticCustomError

from cairn_contracts import limits
from cairn_contracts.memory import Memory, ProjectId

SelectionReason = Literal["semantic", "keyword", "keyword+semantic", "ilike_fallback"]


def _query(value: Any) -> Any:
    """Checked before anything else runs, so a bad query never costs an embedding."""
    if not isinstance(value, str) or not value.strip():
        raise PydanticCustomError("invalid_query", "query must be a non-blank string")
    if len(value) > limits.QUERY_MAX_CHARS:
        raise PydanticCustomError(
            "query_too_long", "query is longer than {cap} characters", {"cap": limits.QUERY_MAX_CHARS}
        )
    return value


class RecallRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")
    query: Annotated[str, BeforeValidator(_query)]
    limit: Annotated[int, Field(ge=1, le=limits.RECALL_LIMIT_MAX)] = limits.RECALL_LIMIT_DEFAULT
    project_id: ProjectId = None
    include_superseded: bool = False
    mode: Literal["hybrid", "semantic", "keyword"] = "hybrid"


class RecallHit(BaseModel):
    memory: Memory
    score: float | None  # cosine similarity in [-1, 1]; null on the fallback path
    selection_reason: SelectionReason


class RecallMeta(BaseModel):
    total_count: int
    fallback: bool
    reason: str | None
    underfilled: bool
    mode: str
    # exact / ann: a subject's rows scanned exactly or through the tenant's HNSW; subject_ann: a large
    # subject's own HNSW indexes; subject_exact: a large subject scored exactly from the recall replica's
    # copy of its vectors; keyword / ilike: no embedding.
    strategy: Literal["ann", "exact", "keyword", "ilike", "subject_ann", "subject_exact"]
    ann_iterative_scan: Literal["off", "applied", "unavailable"] | None = None
    ann_iterative_scan_reason: str | None = None


class MemoryRecalled(BaseModel):
    """JetStream `cairn.v1.events.memory.recalled`: memories a healthy recall returned above the floor."""

    type: Literal["cairn.v1.events.memory.recalled"] = "cairn.v1.events.memory.recalled"
    tenant_id: str
    subject_id: str
    memory_ids: Annotated[list[str], Field(min_length=1, max_length=limits.RECALL_LIMIT_MAX)]
