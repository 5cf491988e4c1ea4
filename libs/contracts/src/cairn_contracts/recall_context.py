"""Merged recall (`POST /api/v1/recall`): memory ∪ knowledge with the selection ledger and diversity,
and the referenced funnel (`POST /api/v1/recall/{recall_id}/referenced`, `GET /api/v1/recall/metrics`)."""

import uuid
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field
from pydantic_core import PydanticCustomError

from cairn_contracts import limits
from cairn_contracts.knowledge import (
    AnswerConfidence,
    DiversityMeta,
    DiversityOptions,
    KnowledgeHit,
    Provenance,
)
from cairn_contracts.memory import ProjectId, Source, _session_id
from cairn_contracts.recall import _query
from cairn_contracts.text import clean_text


def _optional_session_id(value: Any) -> Any:
    """Absent means no containment for this call; anything given must be a string of at most 200 bytes."""
    return None if value is None else _session_id(value)


class RecallContextRequest(BaseModel):
    """`POST /api/v1/recall`."""

    model_config = ConfigDict(extra="ignore")
    # A missing query is checked like a blank one (invalid_query), not as a missing field.
    query: Annotated[
        str, BeforeValidator(clean_text), BeforeValidator(_query), Field(validate_default=True)
    ] = ""
    limit: Annotated[int, Field(ge=1, le=limits.RECALL_LIMIT_MAX)] = limits.RECALL_LIMIT_DEFAULT
    project_id: ProjectId = None
    session_id: Annotated[str | None, BeforeValidator(_optional_session_id)] = None


class RecallContextMessage(RecallContextRequest):
    """NATS body of `cairn.v1.recall.context`; `diversity` overrides the configured knobs for one call."""

    type: Literal["cairn.v1.recall.context"] = "cairn.v1.recall.context"
    diversity: DiversityOptions = DiversityOptions()


class MemorySummary(BaseModel):
    """A memory as the merged list shows it: only fields an unchanged corpus keeps unchanged (no recall
    counters), so repeated calls render a byte-identical `data` array."""

    id: str
    text: str
    source: Source
    confidence: float
    tags: list[str]
    project_id: str | None
    created_at: datetime


class MergedItem(BaseModel):
    """One row of the merged list: exactly one of `memory` / `article`, per `source`."""

    source: Literal["memory", "knowledge"]
    id: str
    rank: int  # 1-based in the merged list
    score: float | None
    selection_reason: str
    tokens_estimate: int  # bytes/4 of the text a client would paste; an estimate, never a tokenizer count
    memory: MemorySummary | None = None
    article: KnowledgeHit | None = None


class CandidatesConsidered(BaseModel):
    memory: int
    knowledge: int
    total: int


class SourceEnvelope(BaseModel):
    """The untouched per-source result: `{data, meta}` as that source's own endpoint returns it."""

    data: list[Any]
    meta: dict[str, Any]


class RecallContextMeta(BaseModel):
    recall_id: str  # minted per call; the search id stamped on the knowledge half's surfaced rows
    results_ranking: Literal["heuristic_cross_source"] = "heuristic_cross_source"
    limit: int
    candidates_considered: CandidatesConsidered
    selected_count: int
    memory_count: int
    knowledge_count: int
    tokens_selected: int
    tokens_candidates: int
    tokens_saved_vs_candidates: int
    answer_confidence: AnswerConfidence
    provenance: Provenance
    confidence: float | None
    degraded: bool
    degraded_reason: str | None
    diversity: DiversityMeta | None
    session_id: str | None


class RecallContextResponse(BaseModel):
    data: list[MergedItem]
    memory: SourceEnvelope
    knowledge: SourceEnvelope
    meta: RecallContextMeta


def _recall_id(value: Any) -> Any:
    try:
        return str(uuid.UUID(str(value)))
    except ValueError:
        raise PydanticCustomError("invalid_recall_id", "recall_id is not a recall id") from None


def _article_ids(value: Any) -> Any:
    if not isinstance(value, list) or not value:
        raise PydanticCustomError(
            "invalid_article_ids", "article_ids must be a non-empty list of article ids"
        )
    if len(value) > limits.REFERENCED_IDS_MAX:
        raise PydanticCustomError(
            "too_many_article_ids", "at most {cap} article_ids per call", {"cap": limits.REFERENCED_IDS_MAX}
        )
    out: list[str] = []
    for item in value:
        if not isinstance(item, str):
            raise PydanticCustomError("invalid_article_ids", "every article id must be a string")
        try:
            out.append(str(uuid.UUID(item)))
        except ValueError:
            raise PydanticCustomError(
                "invalid_article_ids", "every article id must be an article id"
            ) from None
    return list(dict.fromkeys(out))


RecallId = Annotated[str, BeforeValidator(_recall_id)]


class ReferencedRequest(BaseModel):
    """`POST /api/v1/recall/{recall_id}/referenced` body."""

    model_config = ConfigDict(extra="ignore")
    article_ids: Annotated[list[str], BeforeValidator(_article_ids)]
    project_id: ProjectId = None


class ReferencedMessage(ReferencedRequest):
    """NATS body of `cairn.v1.recall.referenced`."""

    recall_id: RecallId


class ReferencedResult(BaseModel):
    recall_id: str
    article_ids: Annotated[list[str], Field(max_length=limits.REFERENCED_IDS_MAX)]
    recorded: int  # new (recall_id, article_id) pairs; a repeat records 0


class MetricsRequest(BaseModel):
    """NATS body of `cairn.v1.recall.metrics` (the tenant comes from the scope)."""

    since: datetime | None = None


class RecallMetrics(BaseModel):
    """Funnel over DISTINCT (recall_id, article_id) pairs of the tenant."""

    tenant_id: str
    surfaced: int
    referenced: int
    reference_rate: float | None  # referenced / surfaced; null when nothing was surfaced
