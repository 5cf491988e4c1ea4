"""Memory paths: validated here against the contracts, served by the memory and recall services over NATS."""

from typing import Annotated, Any

from fastapi import APIRouter, Body, Path, Query, Request, Response, status

from cairn_contracts import limits, subjects
from cairn_contracts.envelope import DataEnvelope
from cairn_contracts.memory import (
    ListMemoriesRequest,
    LongMemoryWrite,
    Memory,
    MemoryIdRequest,
    RememberRequest,
    SessionHistoryRequest,
    SessionTurn,
    SupersedeRequest,
)
from cairn_contracts.promotion import PromoteAccepted, PromoteRequest
from cairn_contracts.recall import RecallHit, RecallRequest
from cairn_gateway.deps import ReadScopeDep, ScopeDep, StateDep, WriteScopeDep, gateway_state
from cairn_gateway.idempotency import IDEMPOTENT, write_headers

router = APIRouter(prefix="/api/v1", tags=["memory"])

MemoryOrTurn = Memory | SessionTurn


def _envelope(reply_data: Any, meta: dict[str, Any]) -> dict[str, Any]:
    return {"data": reply_data, "meta": meta}


@router.post(
    "/memory",
    status_code=status.HTTP_201_CREATED,
    response_model=DataEnvelope[MemoryOrTurn],
    dependencies=[IDEMPOTENT],
)
async def remember(
    body: Annotated[RememberRequest, Body()], scope: WriteScopeDep, request: Request
) -> Response:
    """Write a long-term memory (default tier) or append a session turn (`tier: session`)."""
    # The hot write path: the service's reply goes out as it came (`response_model` documents it).
    envelope = await gateway_state(request).services.request_envelope(
        subjects.MEMORY_REMEMBER, scope, body, headers=write_headers(request)
    )
    return Response(envelope, status_code=status.HTTP_201_CREATED, media_type="application/json")


@router.get("/memory", response_model=DataEnvelope[list[Memory]])
async def list_memories(
    query: Annotated[ListMemoriesRequest, Query()], state: StateDep, scope: ScopeDep
) -> dict[str, Any]:
    """List the caller's long-term memories. `all_subjects` counts only for superadmin (oversight)."""
    if not scope.is_superadmin:
        query = query.model_copy(update={"all_subjects": False})
    reply = await state.services.request(subjects.MEMORY_LIST, scope, query)
    return _envelope(reply.data, reply.meta)


@router.post("/memory/recall", response_model=DataEnvelope[list[RecallHit]])
async def recall(body: RecallRequest, state: StateDep, scope: ReadScopeDep) -> Response:
    """Recall the caller's memories for a query: hybrid by default, never a silent empty (see meta)."""
    # The hot read path: the recall service's reply goes out as it came (`response_model` documents it).
    envelope = await state.services.request_envelope(subjects.RECALL_MEMORY, scope, body)
    return Response(envelope, media_type="application/json")


@router.post(
    "/memory/promote",
    status_code=status.HTTP_202_ACCEPTED,
    response_model=DataEnvelope[PromoteAccepted],
    dependencies=[IDEMPOTENT],
)
async def promote(body: PromoteRequest, state: StateDep, scope: WriteScopeDep) -> dict[str, Any]:
    """Promote a session's turns into long-term memories (a Temporal workflow; 429 when over budget)."""
    reply = await state.services.request(subjects.PROMOTION_PROMOTE, scope, body)
    return _envelope(reply.data, reply.meta)


@router.get("/memory/{memory_id}", response_model=DataEnvelope[Memory])
async def get_memory(
    memory_id: Annotated[str, Path(max_length=100)], state: StateDep, scope: ScopeDep
) -> dict[str, Any]:
    reply = await state.services.request(subjects.MEMORY_GET, scope, MemoryIdRequest(id=memory_id))
    return _envelope(reply.data, reply.meta)


@router.delete("/memory/{memory_id}", response_model=DataEnvelope[Memory])
async def forget_memory(
    memory_id: Annotated[str, Path(max_length=100)], state: StateDep, scope: WriteScopeDep
) -> dict[str, Any]:
    """Delete outright (own scope; a superadmin impersonating may delete any memory in the tenant)."""
    reply = await state.services.request(subjects.MEMORY_FORGET, scope, MemoryIdRequest(id=memory_id))
    return _envelope(reply.data, reply.meta)


@router.post(
    "/memory/{memory_id}/supersede",
    status_code=status.HTTP_201_CREATED,
    response_model=DataEnvelope[Memory],
    dependencies=[IDEMPOTENT],
)
async def supersede_memory(
    memory_id: Annotated[str, Path(max_length=100)],
    body: LongMemoryWrite,
    state: StateDep,
    scope: WriteScopeDep,
) -> dict[str, Any]:
    """Write a newer memory that supersedes this one; the old one stays readable with include_superseded."""
    reply = await state.services.request(
        subjects.MEMORY_SUPERSEDE, scope, SupersedeRequest(id=memory_id, memory=body)
    )
    return _envelope(reply.data, reply.meta)


@router.get("/sessions/{session_id}/history", response_model=DataEnvelope[list[SessionTurn]])
async def session_history(
    session_id: Annotated[str, Path()],
    state: StateDep,
    scope: ScopeDep,
    limit: Annotated[int, Query(ge=1, le=limits.HISTORY_LIMIT_MAX)] = limits.HISTORY_LIMIT_DEFAULT,
    offset: Annotated[int, Query(ge=0, le=limits.LIST_OFFSET_MAX)] = 0,
) -> dict[str, Any]:
    """The caller's turns of this session in insertion order (expired turns never appear)."""
    request = SessionHistoryRequest.model_validate(
        {"session_id": session_id, "limit": limit, "offset": offset}
    )
    reply = await state.services.request(subjects.SESSION_HISTORY, scope, request)
    return _envelope(reply.data, reply.meta)
