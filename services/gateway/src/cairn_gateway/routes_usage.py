"""`GET /api/v1/tenants/{id}/usage`: per-tenant usage per UTC day (superadmin, or the tenant's own
user/orchestrator key). Another tenant's usage is a 404, exactly like a tenant that does not exist."""

from datetime import UTC, date, datetime, timedelta
from typing import Annotated

from fastapi import APIRouter, Query

from cairn_contracts import limits
from cairn_contracts.envelope import DataEnvelope
from cairn_contracts.errors import ErrorCode, Forbidden, NotFound, ValidationFailed
from cairn_contracts.identity import Role
from cairn_contracts.usage import TenantUsage, UsageCounts, UsageDay
from cairn_gateway.deps import KeyDep, StateDep
from cairn_gateway.store import parse_uuid

router = APIRouter(prefix="/api/v1")

USAGE_ROLES = (Role.user, Role.orchestrator)  # agents meter, they do not read the bill


def usage_range(first: date | None, last: date | None) -> tuple[date, date]:
    """Defaults: the last 30 UTC days up to today. Reversed or wider than a year: 422."""
    last = last or datetime.now(UTC).date()
    first = first or last - timedelta(days=limits.USAGE_RANGE_DEFAULT_DAYS - 1)
    if first > last:
        raise ValidationFailed(ErrorCode.invalid_range, "`from` must not be after `to`")
    if (last - first).days + 1 > limits.USAGE_RANGE_MAX_DAYS:
        raise ValidationFailed(
            ErrorCode.range_too_wide, f"a usage range covers at most {limits.USAGE_RANGE_MAX_DAYS} days"
        )
    return first, last


def totals(days: list[UsageDay]) -> UsageCounts:
    summed = UsageCounts(
        writes=sum(d.writes for d in days),
        session_bytes=sum(d.session_bytes for d in days),
        recalls=sum(d.recalls for d in days),
        embedded_tokens=sum(d.embedded_tokens for d in days),
        compile_calls=sum(d.compile_calls for d in days),
    )
    summed.live_rows = days[-1].live_rows if days else 0
    return summed


@router.get("/tenants/{tenant_id}/usage", tags=["admin"], response_model_by_alias=True)
async def tenant_usage(
    tenant_id: str,
    state: StateDep,
    key: KeyDep,
    from_: Annotated[date | None, Query(alias="from", description="first UTC day (YYYY-MM-DD)")] = None,
    to: Annotated[date | None, Query(description="last UTC day, included (default today)")] = None,
) -> DataEnvelope[TenantUsage]:
    """Writes, session bytes, recalls, embedded tokens (estimated), compile calls and live rows per UTC
    day. Counters reach the database within a flush interval (10 s by default) of the request."""
    parsed = parse_uuid(tenant_id)
    tenant_id = str(parsed) if parsed else tenant_id
    if key.role is not Role.superadmin and key.tenant_id != tenant_id:
        raise NotFound("no such tenant")
    if parsed is None or not await state.store.tenant_exists(tenant_id):
        raise NotFound("no such tenant")
    if key.role is not Role.superadmin and key.role not in USAGE_ROLES:
        raise Forbidden("only a user or orchestrator key of the tenant (or superadmin) reads its usage")
    first, last = usage_range(from_, to)
    days = await state.store.usage(tenant_id, first, last)
    return DataEnvelope(
        data=TenantUsage(tenant_id=tenant_id, from_=first, to=last, days=days, totals=totals(days))
    )
