"""`POST /api/v1/memory/graduate`: served by the graduation service over NATS, status from the verdict."""

from typing import Any

from fastapi import APIRouter, status
from fastapi.responses import JSONResponse

from cairn_contracts import subjects
from cairn_contracts.envelope import DataEnvelope
from cairn_contracts.errors import ErrorEnvelope
from cairn_contracts.graduation import GraduateRequest, GraduateResult
from cairn_gateway.deps import StateDep, WriteScopeDep
from cairn_gateway.idempotency import IDEMPOTENT

router = APIRouter(prefix="/api/v1", tags=["memory"])

# The graduation service waits up to CAIRN_GRADUATION_WAIT_SECONDS (25 s) for its workflow; this is longer.
GRADUATE_TIMEOUT_SECONDS = 35.0


@router.post(
    "/memory/graduate",
    status_code=status.HTTP_201_CREATED,
    response_model=DataEnvelope[GraduateResult],
    dependencies=[IDEMPOTENT],
    responses={
        200: {
            "model": DataEnvelope[GraduateResult],
            "description": "duplicate, deduplicated, already graduated",
        },
        404: {"model": ErrorEnvelope, "description": "not_found: a foreign or unknown memory"},
        409: {"model": ErrorEnvelope, "description": "already_graduated into another scope"},
        422: {"model": ErrorEnvelope, "description": "invalid_memory_id, validation_error"},
        503: {"model": ErrorEnvelope, "description": "gate_unavailable: embeddings down, nothing stamped"},
    },
)
async def graduate(body: GraduateRequest, state: StateDep, scope: WriteScopeDep) -> JSONResponse:
    """Graduate one of the caller's memories into an owner-visible knowledge article through the novelty
    gate: 201 `created` / `gated_to_draft`, 200 `duplicate` / `deduplicated` / `already_graduated`.
    `re_scope: "global"` makes a project memory's article tenant-wide, on its first graduation only."""
    reply = await state.services.request(
        subjects.GRADUATION_GRADUATE, scope, body, timeout=GRADUATE_TIMEOUT_SECONDS
    )
    result = GraduateResult.model_validate(reply.data)
    envelope: dict[str, Any] = {"data": result.model_dump(mode="json"), "meta": reply.meta}
    return JSONResponse(envelope, status_code=201 if result.created else 200)
