"""The audit trail, for superadmins: key creation and revocation, and impersonation."""

from typing import Annotated

from fastapi import APIRouter, Query

from cairn_contracts.audit import AuditEvent, ListAuditEventsRequest
from cairn_contracts.envelope import DataEnvelope, ListMeta
from cairn_gateway.deps import StateDep, SuperadminDep

router = APIRouter(prefix="/api/v1", tags=["admin"])


class AuditPage(DataEnvelope[list[AuditEvent]]):
    meta: ListMeta  # type: ignore[assignment]


@router.get("/audit-events", response_model=AuditPage)
async def list_audit_events(
    query: Annotated[ListAuditEventsRequest, Query()], state: StateDep, _: SuperadminDep
) -> AuditPage:
    """Newest first. Filter by `tenant_id` (the tenant acted in) and `action`."""
    events, total = await state.store.list_audit_events(query)
    return AuditPage(data=events, meta=ListMeta(total_count=total, limit=query.limit, offset=query.offset))
