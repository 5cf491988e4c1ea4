"""Lists inside NATS messages are bounded: at the edge they validate, one past it they do not."""

from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from cairn_contracts import limits
from cairn_contracts.knowledge import KnowledgeSearchMessage, VisibleIdsRequest, VisibleIdsResult
from cairn_contracts.promotion import (
    Candidate,
    CompiledSession,
    PersistPromotedRequest,
    PersistPromotedResult,
)
from cairn_contracts.recall import MemoryRecalled
from cairn_contracts.recall_context import ReferencedResult

CANDIDATE = {"text": "The user likes tea", "confidence": 0.9}

CASES: list[tuple[type[BaseModel], dict[str, Any], str, Any, int]] = [
    (PersistPromotedRequest, {"session_id": "s"}, "candidates", CANDIDATE, limits.PROMOTION_CANDIDATES_MAX),
    (CompiledSession, {"fingerprint": "f"}, "candidates", CANDIDATE, limits.PROMOTION_CANDIDATES_MAX),
    (PersistPromotedResult, {}, "memory_ids", "m", limits.PROMOTION_CANDIDATES_MAX),
    (Candidate, CANDIDATE, "tags", "t", limits.TAGS_MAX),
    (Candidate, CANDIDATE, "cross_links", "a", limits.CANDIDATE_LINKS_MAX),
    (MemoryRecalled, {"tenant_id": "t", "subject_id": "s"}, "memory_ids", "m", limits.RECALL_LIMIT_MAX),
    (VisibleIdsRequest, {}, "ids", "a", limits.VISIBLE_IDS_MAX),
    (VisibleIdsResult, {}, "ids", "a", limits.VISIBLE_IDS_MAX),
    (ReferencedResult, {"recall_id": "r", "recorded": 0}, "article_ids", "a", limits.REFERENCED_IDS_MAX),
    (KnowledgeSearchMessage, {"query": "q"}, "query_vector", 0.5, limits.VECTOR_DIM_MAX),
]


@pytest.mark.parametrize(("model", "base", "field", "item", "cap"), CASES)
def test_list_at_and_past_its_cap(
    model: type[BaseModel], base: dict[str, Any], field: str, item: Any, cap: int
) -> None:
    model.model_validate({**base, field: [item] * cap})
    with pytest.raises(ValidationError):
        model.model_validate({**base, field: [item] * (cap + 1)})
