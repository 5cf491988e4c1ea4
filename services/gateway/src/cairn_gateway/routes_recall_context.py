"""Merged recall and its funnel, served by the recall service over NATS."""

from typing import Annotated, Any

from fastapi import APIRouter, Path, Response

from cairn_contracts import subjects
from cairn_contracts.envelope import DataEnvelope
from cairn_contracts.recall_context import (
    MetricsRequest,
    RecallContextMessage,
    RecallContextRequest,
    RecallContextResponse,
    RecallMetrics,
    ReferencedMessage,
    ReferencedRequest,
    ReferencedResult,
)
from cairn_gateway.deps import ReadScopeDep, ScopeDep, StateDep, WriteScopeDep

router = APIRouter(prefix="/api/v1", tags=["recall"])


@router.post("/recall", response_model=RecallContextResponse)
async def recall_context(body: RecallContextRequest, state: StateDep, scope: ReadScopeDep) -> Response:
    """Merged recall: the caller's memories and the knowledge it can see, one list sorted by score (then
    knowledge before memory, then id), with the per-source envelopes, the selection ledger and diversity.
    Degrades (`meta.degraded`) rather than failing when one half is down."""
    request = RecallContextMessage.model_validate(body.model_dump())
    # The recall service built the response from the contract models: it goes out as it came.
    response = await state.services.request_envelope(subjects.RECALL_CONTEXT, scope, request, data_only=True)
    return Response(response, media_type="application/json")


@router.post("/recall/{recall_id}/referenced", response_model=DataEnvelope[ReferencedResult])
async def referenced(
    recall_id: Annotated[str, Path(max_length=100)],
    body: ReferencedRequest,
    state: StateDep,
    scope: WriteScopeDep,
) -> dict[str, Any]:
    """Record that the caller used these articles of this recall (at most 50). Any id this recall did not
    surface in the caller's tenant fails the whole call with 422 `not_surfaced`; repeats are no-ops."""
    request = ReferencedMessage.model_validate({**body.model_dump(), "recall_id": recall_id})
    reply = await state.services.request(subjects.RECALL_REFERENCED, scope, request)
    return {"data": reply.data, "meta": reply.meta}


@router.get("/recall/metrics", response_model=DataEnvelope[RecallMetrics])
async def metrics(state: StateDep, scope: ScopeDep) -> dict[str, Any]:
    """The tenant's funnel over distinct (recall_id, article_id) pairs: surfaced, referenced, rate."""
    reply = await state.services.request(subjects.RECALL_METRICS, scope, MetricsRequest())
    return {"data": reply.data, "meta": reply.meta}
