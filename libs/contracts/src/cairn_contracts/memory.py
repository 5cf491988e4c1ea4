"""Memory REST bodies and the NATS messages of the memory service."""

import json
import uuid
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    RootModel,
    Tag,
)
from pydantic_core import PydanticCustomError

from cairn_contracts import limits


def _max_bytes(code: str, cap: int) -> AfterValidator:
    def check(value: str) -> str:
        if len(value.encode()) > cap:
            raise PydanticCustomError(code, "longer than {cap} bytes", {"cap": cap})
        return value

    return AfterValidator(check)


def _not_blank(value: str) -> str:
    if not value.strip():
        raise PydanticCustomError("validation_error", "must not be blank")
    return value


def _session_id(value: Any) -> Any:
    if not isinstance(value, str) or not value.strip() or len(value.encode()) > limits.SESSION_ID_MAX_BYTES:
        raise PydanticCustomError(
            "invalid_session_id",
            "session_id must be a non-blank string of at most {cap} bytes",
            {"cap": limits.SESSION_ID_MAX_BYTES},
        )
    return value


def _project_id(value: Any) -> Any:
    """Absent or blank means global; anything else must be a well-formed UUID."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    try:
        return str(uuid.UUID(str(value)))
    except ValueError:
        raise PydanticCustomError("invalid_project_id", "project_id is not a valid project id") from None


def _metadata(value: dict[str, Any]) -> dict[str, Any]:
    if len(json.dumps(value)) > limits.METADATA_MAX_BYTES:
        raise PydanticCustomError(
            "validation_error", "metadata is larger than {cap} bytes", {"cap": limits.METADATA_MAX_BYTES}
        )
    return value


MemoryText = Annotated[
    str, AfterValidator(_not_blank), _max_bytes("text_too_long", limits.MEMORY_TEXT_MAX_BYTES)
]
SessionContent = Annotated[
    str, AfterValidator(_not_blank), _max_bytes("content_too_large", limits.SESSION_CONTENT_MAX_BYTES)
]
SessionId = Annotated[str, BeforeValidator(_session_id)]
ProjectId = Annotated[str | None, BeforeValidator(_project_id)]
Tags = Annotated[
    list[Annotated[str, Field(min_length=1, max_length=limits.TAG_MAX_CHARS)]],
    Field(max_length=limits.TAGS_MAX),
]
Metadata = Annotated[dict[str, Any], AfterValidator(_metadata)]


class Source(StrEnum):
    explicit = "explicit"
    promoted = "promoted"


class TurnRole(StrEnum):
    user = "user"
    assistant = "assistant"
    system = "system"
    fact = "fact"


class LongMemoryWrite(BaseModel):
    """`POST /api/v1/memory` with tier `long` (the default). Scope fields in the body are ignored."""

    model_config = ConfigDict(extra="ignore")
    tier: Literal["long"] = "long"
    text: MemoryText
    tags: Tags = []
    metadata: Metadata = {}
    confidence: Annotated[float, Field(ge=0.0, le=1.0)] = 1.0
    project_id: ProjectId = None


class SessionTurnWrite(BaseModel):
    """`POST /api/v1/memory` with tier `session`: one append-only turn. No embedding."""

    model_config = ConfigDict(extra="ignore")
    tier: Literal["session"]
    session_id: SessionId
    role: TurnRole
    content: SessionContent
    metadata: Metadata = {}
    expires_at: datetime | None = None
    ttl_seconds: Annotated[int, Field(ge=1, le=limits.SESSION_TTL_MAX_SECONDS)] | None = None


def _tier(value: Any) -> str:
    tier = value.get("tier", "long") if isinstance(value, dict) else getattr(value, "tier", "long")
    return tier if tier in ("long", "session") else "long"


RememberRequest = Annotated[
    Annotated[LongMemoryWrite, Tag("long")] | Annotated[SessionTurnWrite, Tag("session")],
    Discriminator(_tier),
]


class Memory(BaseModel):
    id: str
    text: str
    source: Source
    confidence: float
    tags: list[str]
    metadata: dict[str, Any]
    project_id: str | None
    source_session_id: str | None
    superseded_by: str | None
    embedding_status: Literal["pending", "ready"]
    recall_count: int
    last_recalled_at: datetime | None
    created_at: datetime
    subject_id: str | None = None  # only filled on the superadmin oversight listing


class SessionTurn(BaseModel):
    seq: int
    session_id: str
    role: TurnRole
    content: str
    metadata: dict[str, Any]
    expires_at: datetime
    created_at: datetime


class ListMemoriesRequest(BaseModel):
    """NATS body of `cairn.v1.memory.list` (the gateway builds it from the query string)."""

    limit: Annotated[int, Field(ge=1, le=limits.LIST_LIMIT_MAX)] = limits.LIST_LIMIT_DEFAULT
    offset: Annotated[int, Field(ge=0, le=limits.LIST_OFFSET_MAX)] = 0
    source: Source | None = None
    tag: str | None = None
    project_id: ProjectId = None
    include_superseded: bool = False
    all_subjects: bool = False


class MemoryIdRequest(BaseModel):
    id: str


class SupersedeRequest(BaseModel):
    id: str
    memory: LongMemoryWrite


class SessionHistoryRequest(BaseModel):
    session_id: SessionId
    limit: Annotated[int, Field(ge=1, le=limits.HISTORY_LIMIT_MAX)] = limits.HISTORY_LIMIT_DEFAULT
    offset: Annotated[int, Field(ge=0, le=limits.LIST_OFFSET_MAX)] = 0


class MemoryCreated(BaseModel):
    """JetStream `cairn.v1.events.memory.created`: a row waits for its embedding."""

    type: Literal["cairn.v1.events.memory.created"] = "cairn.v1.events.memory.created"
    memory_id: str
    tenant_id: str


class RememberMessage(RootModel[RememberRequest]):
    """NATS body of `cairn.v1.memory.remember`: either tier, told apart by `tier`."""
