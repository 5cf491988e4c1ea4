"""Graduation: a hot long-term memory becomes an owner-visible knowledge article through the novelty gate.

`POST /api/v1/memory/graduate` (NATS `cairn.v1.graduation.graduate`) takes a `GraduateRequest` and answers
a `GraduateResult`; the `GraduateMemory` workflow and the sweep take and return the other models here.
"""

import uuid
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict
from pydantic_core import PydanticCustomError

from cairn_contracts.knowledge import CREATED_VERDICTS, Article, Verdict

# The verdict of a graduation: the gate's, or `already_graduated` when the memory's article already exists
# (the gate is not run again).
GraduationVerdict = Literal["created", "gated_to_draft", "duplicate", "deduplicated", "already_graduated"]
GraduatedScope = Literal["project", "global"]


def _memory_id(value: Any) -> str:
    if not isinstance(value, str):
        raise PydanticCustomError("invalid_memory_id", "memory_id must be a memory id (a UUID string)")
    try:
        return str(uuid.UUID(value))
    except ValueError:
        raise PydanticCustomError("invalid_memory_id", "memory_id is not a valid memory id") from None


MemoryId = Annotated[str, BeforeValidator(_memory_id)]


class GraduateRequest(BaseModel):
    """`POST /api/v1/memory/graduate`. `re_scope: "global"` makes a project memory's article tenant-wide
    (`project_id: null`); it takes effect only on the memory's first graduation. Scope fields are ignored."""

    model_config = ConfigDict(extra="ignore")
    memory_id: MemoryId
    re_scope: Literal["global"] | None = None


class GraduateResult(BaseModel):
    """`data` of the graduate reply: `{verdict, created, article}` (the article without its body)."""

    verdict: GraduationVerdict
    created: bool
    article: Article


def verdict_created(verdict: GraduationVerdict) -> bool:
    return verdict in {v.value for v in CREATED_VERDICTS}


class GraduateInput(BaseModel):
    """The `GraduateMemory` workflow's input: whose memory, and whether to widen it to tenant-wide."""

    tenant_id: str
    subject_id: str
    memory_id: str
    re_scope: Literal["global"] | None = None
    propose_timeout_seconds: float = 30.0


class MemorySnapshot(BaseModel):
    """What the workflow needs of the memory, read in its own scope (`None` when it does not exist)."""

    id: str
    text: str
    project_id: str | None
    tags: list[str]
    graduated_at: datetime | None = None
    graduated_article_id: str | None = None
    graduated_scope: GraduatedScope | None = None


class StampResult(BaseModel):
    """The first-graduation write: `won` is false when another graduation stamped the memory first; then
    `article_id` / `scope` are that graduation's."""

    won: bool
    article_id: str
    scope: GraduatedScope


class GraduateProgress(BaseModel):
    """What the `progress` query returns while a graduation runs."""

    stage: str = "starting"
    verdict: GraduationVerdict | None = None
    article_id: str | None = None
    scope: GraduatedScope | None = None


class GraduateOutcome(BaseModel):
    """The workflow's result. `scope` is the stamped scope of the memory's article (what it graduated as),
    which the on-demand trigger compares with the caller's `re_scope`."""

    verdict: GraduationVerdict
    created: bool
    article: Article
    scope: GraduatedScope
    stamped_by_this_run: bool = False


class SweepState(BaseModel):
    """Carried across continue-as-new: when the tick started (a memory claimed since then is not claimed
    again in this tick), how many graduations the tick may still start, and the running totals."""

    tick_started_at: datetime | None = None
    remaining: int | None = None
    runs: int = 0
    considered: int = 0
    graduated: int = 0
    already_graduated: int = 0
    already_running: int = 0
    failed: int = 0


class SweepParams(BaseModel):
    """The sweep workflow's input (the schedule's action holds the configured values)."""

    recall_threshold: int = 3
    max_per_run: int = 50
    scan_limit: int = 500
    batch_size: int = 50
    batches_per_run: int = 4  # continue-as-new after this many batches: history stays bounded
    task_queue: str = "cairn-graduation"
    propose_timeout_seconds: float = 30.0
    # Set only by continue-as-new: the tick in progress (a new tick starts with none).
    state: SweepState | None = None


class SweepBatchRequest(BaseModel):
    tick_started_at: datetime
    limit: int
    recall_threshold: int
    scan_limit: int


class SweepCandidate(BaseModel):
    tenant_id: str
    subject_id: str
    memory_id: str


class SweepResult(SweepState):
    pass


__all__ = [
    "Article",
    "GraduateInput",
    "GraduateOutcome",
    "GraduateProgress",
    "GraduateRequest",
    "GraduateResult",
    "GraduatedScope",
    "GraduationVerdict",
    "MemorySnapshot",
    "StampResult",
    "SweepBatchRequest",
    "SweepCandidate",
    "SweepParams",
    "SweepResult",
    "SweepState",
    "Verdict",
    "verdict_created",
]
