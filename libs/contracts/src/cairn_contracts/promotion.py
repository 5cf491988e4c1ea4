"""Promotion: compiler candidates and the Temporal workflow's input and result."""

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from cairn_contracts import limits
from cairn_contracts.memory import SessionId, Tags


class Candidate(BaseModel):
    """One durable fact a compiler extracted from a session window."""

    text: Annotated[str, Field(min_length=1, max_length=2000)]
    confidence: Annotated[float, Field(ge=0.0, le=1.0)]
    tags: Tags = []
    # Knowledge article ids; validated against visibility before any write.
    cross_links: Annotated[
        list[Annotated[str, Field(max_length=limits.CANDIDATE_LINK_MAX_CHARS)]],
        Field(max_length=limits.CANDIDATE_LINKS_MAX),
    ] = []
    # What the fact is about ("user|residence", "standup"): a new value for a slot a live promoted memory
    # holds supersedes it ("updated"). None: the compiler does not know, so only paraphrases supersede.
    slot: Annotated[str, Field(min_length=1, max_length=200)] | None = None


class Turn(BaseModel):
    """A session turn as a compiler sees it (content is data, never instructions)."""

    role: str
    content: str
    at: datetime | None = None  # when the turn was written, if known (dates time-bound facts)


# A reserved subject the promotion eval runs under: structurally excluded from real promotion.
EVAL_SUBJECT_ID = "__cairn_promotion_eval__"


class PromoteRequest(BaseModel):
    """`POST /api/v1/memory/promote`."""

    model_config = ConfigDict(extra="ignore")
    session_id: SessionId


class PromoteAccepted(BaseModel):
    """202 body. `status`: started (a run began), running (one was already running: this trigger joined it),
    unchanged (the session matches its watermark: nothing to compile), noop (0 or 1 turns)."""

    workflow_id: str
    status: Literal["started", "running", "unchanged", "noop"]


class PromoteInput(BaseModel):
    """The promotion workflow's input: who, which session, and the budget reservation it runs under."""

    tenant_id: str
    subject_id: str
    session_id: str
    reservation_id: str
    confidence_threshold: float = 0.6
    max_candidates: int = 20
    compile_timeout_seconds: float = 30.0


class SessionSnapshot(BaseModel):
    """What the snapshot activity hands the workflow: never the turns (a session of twenty 100 KiB turns
    would exceed Temporal's payload limit), only their count and fingerprint."""

    turn_count: int
    fingerprint: str
    unchanged: bool


Candidates = Annotated[list[Candidate], Field(max_length=limits.PROMOTION_CANDIDATES_MAX)]


class CompiledSession(BaseModel):
    """The compile activity's result: candidates and the fingerprint of the turns it actually read."""

    candidates: Candidates
    fingerprint: str


class PromoteProgress(BaseModel):
    """What the `progress` query returns while a promotion runs."""

    stage: str = "starting"
    turns: int = 0
    candidates: int = 0
    survivors: int = 0
    promoted: int = 0
    superseded: int = 0
    deduped: int = 0
    dropped_quota: int = 0


class PromoteResult(PromoteProgress):
    status: Literal["promoted", "unchanged", "noop"] = "promoted"
    fingerprint: str | None = None


class PersistPromotedRequest(BaseModel):
    """NATS `cairn.v1.memory.persist_promoted`: survivors of the confidence gate, for the memory service."""

    session_id: str
    candidates: Candidates


class PersistPromotedResult(BaseModel):
    promoted: int = 0
    superseded: int = 0
    deduped: int = 0
    dropped_quota: int = 0
    memory_ids: Annotated[list[str], Field(max_length=limits.PROMOTION_CANDIDATES_MAX)] = []


class SweepResult(BaseModel):
    considered: int = 0
    started: int = 0
    already_running: int = 0
    over_budget: int = 0


class SweepParams(BaseModel):
    confidence_threshold: float = 0.6
    max_candidates: int = 20
    compile_timeout_seconds: float = 30.0
    task_queue: str = "cairn-promotion"


class SweepCandidate(BaseModel):
    tenant_id: str
    subject_id: str
    session_id: str
