"""The audit trail: `GET /api/v1/audit-events` (superadmin), newest first, paged."""

from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from cairn_contracts import limits
from cairn_contracts.identity import Role


class AuditAction(StrEnum):
    key_created = "key_created"  # who minted a key, of which role, for which agent_id
    key_revoked = "key_revoked"
    impersonation = "impersonation"  # a superadmin request acting in a tenant (X-Impersonate-Tenant)


class AuditEvent(BaseModel):
    id: int
    action: AuditAction
    actor_key_id: str | None  # None: the bootstrap command, straight into PostgreSQL
    actor_role: Role | None
    actor_tenant_id: str | None
    tenant_id: str | None  # the tenant acted in
    target_key_id: str | None
    target_role: Role | None
    target_agent_id: str | None
    detail: dict[str, Any]
    created_at: datetime


class ListAuditEventsRequest(BaseModel):
    """The query string of `GET /api/v1/audit-events`."""

    model_config = ConfigDict(extra="ignore")
    limit: Annotated[int, Field(ge=1, le=limits.LIST_LIMIT_MAX)] = limits.LIST_LIMIT_DEFAULT
    offset: Annotated[int, Field(ge=0, le=limits.LIST_OFFSET_MAX)] = 0
    tenant_id: Annotated[str, Field(max_length=100)] | None = None
    action: AuditAction | None = None
