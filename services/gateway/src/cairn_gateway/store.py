"""Identity store: tenants, keys, projects. The gateway owns these tables."""

import uuid
from datetime import date
from typing import Any

import asyncpg
from sqlalchemy import func, select, text, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from cairn_contracts import audit
from cairn_contracts import identity as contract
from cairn_contracts.errors import (
    AlreadyExists,
    AmbiguousResolution,
    NotFound,
    ServiceUnavailable,
    ValidationFailed,
)
from cairn_contracts.identity import Role
from cairn_contracts.usage import UsageDay
from cairn_gateway.keys import display_prefix, key_hash, new_key
from cairn_gateway.repo_url import repo_key
from cairn_observability.tracing import pool_statement
from cairn_providers import SecretBox, save_providers
from cairn_providers.config import describe
from cairn_scope import KeyIdentity
from cairn_storage.models import ApiKey, AuditEvent, Project, Tenant, TenantProvider, TenantUsage


def parse_uuid(value: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(value)
    except (ValueError, TypeError, AttributeError):
        return None


def tenant_out(row: Tenant) -> contract.Tenant:
    return contract.Tenant(
        id=str(row.id),
        name=row.name,
        memory_quota=row.memory_quota,
        promotion_budget_per_hour=row.promotion_budget_per_hour,
        rate_limit_per_second=row.rate_limit_per_second,
        rate_limit_burst=row.rate_limit_burst,
        created_at=row.created_at,
        graduation_recall_threshold=row.graduation_recall_threshold,
        read_rate_limit_per_second=row.read_rate_limit_per_second,
        read_rate_limit_burst=row.read_rate_limit_burst,
    )


def key_out(row: ApiKey) -> contract.ApiKeyInfo:
    return contract.ApiKeyInfo(
        id=str(row.id),
        tenant_id=str(row.tenant_id) if row.tenant_id else None,
        role=Role(row.role),
        agent_id=row.agent_id,
        name=row.name,
        prefix=row.prefix,
        created_at=row.created_at,
        revoked_at=row.revoked_at,
    )


def project_out(row: Project) -> contract.Project:
    return contract.Project(
        id=str(row.id),
        tenant_id=str(row.tenant_id),
        name=row.name,
        slug=row.slug,
        repo_url=row.repo_url,
        created_at=row.created_at,
    )


def _uuid_or_none(value: str | None) -> uuid.UUID | None:
    return uuid.UUID(value) if value else None


def audit_row(
    action: audit.AuditAction,
    actor: KeyIdentity | None,
    *,
    tenant_id: str | None,
    target: ApiKey | None = None,
    detail: dict[str, Any] | None = None,
) -> AuditEvent:
    return AuditEvent(
        action=action.value,
        actor_key_id=_uuid_or_none(actor.key_id) if actor else None,
        actor_role=actor.role.value if actor else None,
        actor_tenant_id=_uuid_or_none(actor.tenant_id) if actor else None,
        tenant_id=_uuid_or_none(tenant_id),
        target_key_id=target.id if target is not None else None,
        target_role=target.role if target is not None else None,
        target_agent_id=target.agent_id if target is not None else None,
        detail=detail or {},
    )


def audit_out(row: AuditEvent) -> audit.AuditEvent:
    return audit.AuditEvent(
        id=row.id,
        action=audit.AuditAction(row.action),
        actor_key_id=str(row.actor_key_id) if row.actor_key_id else None,
        actor_role=Role(row.actor_role) if row.actor_role else None,
        actor_tenant_id=str(row.actor_tenant_id) if row.actor_tenant_id else None,
        tenant_id=str(row.tenant_id) if row.tenant_id else None,
        target_key_id=str(row.target_key_id) if row.target_key_id else None,
        target_role=Role(row.target_role) if row.target_role else None,
        target_agent_id=row.target_agent_id,
        detail=row.detail,
        created_at=row.created_at,
    )


# The per-request key lookup (on a cache miss) as one prepared statement on a plain pool: through the ORM
# it took a session, a BEGIN and a ROLLBACK, and when a burst of keys expired together, overflow
# connections opened (and closed) for it.
_KEY_IDENTITY = (
    "SELECT id, tenant_id, role, agent_id FROM api_keys WHERE key_hash = $1 AND revoked_at IS NULL"
)


class IdentityStore:
    def __init__(
        self,
        sessionmaker: async_sessionmaker[AsyncSession],
        box: SecretBox | None = None,
        key_pool: asyncpg.Pool | None = None,
    ) -> None:
        self._sm = sessionmaker
        self._box = box
        self._key_pool = key_pool

    async def save_providers(
        self, tenant_id: str, update: contract.TenantProvidersUpdate
    ) -> contract.TenantProvidersOut:
        if self._box is None:
            raise ServiceUnavailable(
                "CAIRN_PROVIDER_SECRETS_KEY is not configured: tenant keys cannot be stored"
            )
        async with self._sm.begin() as session:
            return await save_providers(session, tenant_id, update, self._box)

    async def providers(self, tenant_id: str) -> contract.TenantProvidersOut:
        async with self._sm() as session:
            row = await session.get(TenantProvider, uuid.UUID(tenant_id))
        return describe(row)

    async def key_identity(self, hashed: str) -> KeyIdentity | None:
        """The live key with this hash (an index lookup, no secret comparison), or None."""
        if self._key_pool is not None:
            async with self._key_pool.acquire() as conn:
                with pool_statement(_KEY_IDENTITY):
                    found = await conn.fetchrow(_KEY_IDENTITY, hashed)
            if found is None:
                return None
            return KeyIdentity(
                key_id=str(found["id"]),
                tenant_id=str(found["tenant_id"]) if found["tenant_id"] else None,
                role=Role(found["role"]),
                agent_id=found["agent_id"],
            )
        async with self._sm() as session:
            row = (
                await session.execute(
                    select(ApiKey).where(ApiKey.key_hash == hashed, ApiKey.revoked_at.is_(None))
                )
            ).scalar_one_or_none()
        if row is None:
            return None
        return KeyIdentity(
            key_id=str(row.id),
            tenant_id=str(row.tenant_id) if row.tenant_id else None,
            role=Role(row.role),
            agent_id=row.agent_id,
        )

    async def tenant_exists(self, tenant_id: str) -> bool:
        tid = parse_uuid(tenant_id)
        if tid is None:
            return False
        async with self._sm() as session:
            return (await session.get(Tenant, tid)) is not None

    async def usage(self, tenant_id: str, first: date, last: date) -> list[UsageDay]:
        """The tenant's recorded days in [first, last], oldest first."""
        async with self._sm() as session:
            rows = await session.scalars(
                select(TenantUsage)
                .where(
                    TenantUsage.tenant_id == uuid.UUID(tenant_id),
                    TenantUsage.day >= first,
                    TenantUsage.day <= last,
                )
                .order_by(TenantUsage.day)
            )
            return [
                UsageDay(
                    day=r.day,
                    writes=r.writes,
                    session_bytes=r.session_bytes,
                    recalls=r.recalls,
                    embedded_tokens=r.embedded_tokens,
                    compile_calls=r.compile_calls,
                    live_rows=r.live_rows,
                )
                for r in rows
            ]

    async def create_tenant(self, body: contract.TenantCreate) -> contract.Tenant:
        try:
            async with self._sm.begin() as session:
                row = Tenant(id=uuid.uuid4(), name=body.name)
                session.add(row)
                await session.flush()
                await session.refresh(row)
        except IntegrityError:
            raise AlreadyExists(f"a tenant named {body.name!r} exists") from None
        return tenant_out(row)

    async def patch_tenant(self, tenant_id: str, body: contract.TenantPatch) -> contract.Tenant:
        tid = parse_uuid(tenant_id)
        changes: dict[str, Any] = body.model_dump(exclude_unset=True)
        try:
            async with self._sm.begin() as session:
                row = await session.get(Tenant, tid) if tid else None
                if row is None:
                    raise NotFound("no such tenant")
                for field, value in changes.items():
                    setattr(row, field, value)
                await session.flush()
                await session.refresh(row)
        except IntegrityError:
            raise AlreadyExists("a tenant with that name exists") from None
        return tenant_out(row)

    async def create_key(
        self,
        tenant_id: str | None,
        role: Role,
        agent_id: str | None,
        name: str | None,
        actor: KeyIdentity | None = None,
    ) -> contract.CreatedKey:
        """Mint a key; the audit event (who minted it, for which agent) commits with it or not at all."""
        secret = new_key()
        async with self._sm.begin() as session:
            row = ApiKey(
                id=uuid.uuid4(),
                tenant_id=uuid.UUID(tenant_id) if tenant_id else None,
                role=role.value,
                agent_id=agent_id or None,
                name=name,
                prefix=display_prefix(secret),
                key_hash=key_hash(secret),
            )
            session.add(row)
            await session.flush()
            await session.refresh(row)
            session.add(audit_row(audit.AuditAction.key_created, actor, tenant_id=tenant_id, target=row))
        return contract.CreatedKey(**key_out(row).model_dump(), key=secret)

    async def list_keys(self, tenant_id: str) -> list[contract.ApiKeyInfo]:
        async with self._sm() as session:
            rows = (
                (
                    await session.execute(
                        select(ApiKey)
                        .where(ApiKey.tenant_id == uuid.UUID(tenant_id))
                        .order_by(ApiKey.created_at)
                    )
                )
                .scalars()
                .all()
            )
        return [key_out(r) for r in rows]

    async def revoke_key(
        self, key_id: str, tenant_id: str | None, actor: KeyIdentity | None = None
    ) -> contract.ApiKeyInfo:
        """Revoke a key; `tenant_id` confines the revocation (None: any key, for superadmin)."""
        kid = parse_uuid(key_id)
        if kid is None:
            raise NotFound("no such key")
        stmt = (
            update(ApiKey)
            .where(ApiKey.id == kid)
            .values(revoked_at=func.coalesce(ApiKey.revoked_at, func.now()))
            .returning(ApiKey)
        )
        if tenant_id is not None:
            stmt = stmt.where(ApiKey.tenant_id == uuid.UUID(tenant_id))
        async with self._sm.begin() as session:
            row = (await session.execute(stmt)).scalar_one_or_none()
            if row is not None:
                session.add(
                    audit_row(
                        audit.AuditAction.key_revoked,
                        actor,
                        tenant_id=str(row.tenant_id) if row.tenant_id else None,
                        target=row,
                    )
                )
        if row is None:
            raise NotFound("no such key")
        return key_out(row)

    async def record_impersonation(self, actor: KeyIdentity, tenant_id: str, method: str, path: str) -> None:
        async with self._sm.begin() as session:
            session.add(
                audit_row(
                    audit.AuditAction.impersonation,
                    actor,
                    tenant_id=tenant_id,
                    detail={"method": method, "path": path},
                )
            )

    async def list_audit_events(
        self, query: audit.ListAuditEventsRequest
    ) -> tuple[list[audit.AuditEvent], int]:
        stmt = select(AuditEvent)
        if query.tenant_id is not None:
            tid = parse_uuid(query.tenant_id)
            if tid is None:
                return [], 0
            stmt = stmt.where(AuditEvent.tenant_id == tid)
        if query.action is not None:
            stmt = stmt.where(AuditEvent.action == query.action.value)
        async with self._sm() as session:
            total = await session.scalar(select(func.count()).select_from(stmt.subquery()))
            rows = (
                await session.execute(
                    stmt.order_by(AuditEvent.id.desc()).limit(query.limit).offset(query.offset)
                )
            ).scalars()
            return [audit_out(r) for r in rows.all()], int(total or 0)

    async def create_project(
        self, tenant_id: str, body: contract.ProjectCreate, max_projects: int
    ) -> contract.Project:
        try:
            async with self._sm.begin() as session:
                # One tenant's creations are serialised, so two racers cannot both take the last slot.
                await session.execute(
                    text("SELECT pg_advisory_xact_lock(hashtextextended(:k, 0))"),
                    {"k": f"projects:{tenant_id}"},
                )
                count = await session.scalar(
                    select(func.count()).select_from(Project).where(Project.tenant_id == uuid.UUID(tenant_id))
                )
                if (count or 0) >= max_projects:
                    raise ValidationFailed(
                        "project_limit", f"this tenant already has its cap of {max_projects} projects"
                    )
                row = Project(
                    id=uuid.uuid4(),
                    tenant_id=uuid.UUID(tenant_id),
                    name=body.name,
                    slug=body.slug,
                    repo_url=body.repo_url or None,
                    repo_key=repo_key(body.repo_url) if body.repo_url else None,
                )
                session.add(row)
                await session.flush()
                await session.refresh(row)
        except IntegrityError:
            raise AlreadyExists(f"a project with slug {body.slug!r} exists") from None
        return project_out(row)

    async def list_projects(self, tenant_id: str) -> list[contract.Project]:
        async with self._sm() as session:
            rows = (
                (
                    await session.execute(
                        select(Project)
                        .where(Project.tenant_id == uuid.UUID(tenant_id))
                        .order_by(Project.created_at)
                    )
                )
                .scalars()
                .all()
            )
        return [project_out(r) for r in rows]

    async def resolve_project(
        self, tenant_id: str, *, slug: str | None, repo_url: str | None, name: str | None
    ) -> contract.Project:
        """slug > repo_url > name; the first identifier that matches wins; a fuzzy multi-match is 409."""
        tid = uuid.UUID(tenant_id)
        attempts = []
        if slug:
            attempts.append(Project.slug == slug.strip())
        if repo_url:
            key = repo_key(repo_url)
            if key:
                attempts.append(Project.repo_key == key)
        if name:
            attempts.append(func.lower(Project.name) == name.strip().lower())
        async with self._sm() as session:
            for predicate in attempts:
                rows = (
                    (
                        await session.execute(
                            select(Project).where(Project.tenant_id == tid, predicate).limit(2)
                        )
                    )
                    .scalars()
                    .all()
                )
                if len(rows) > 1:
                    raise AmbiguousResolution("more than one project matches; use its slug")
                if rows:
                    return project_out(rows[0])
        raise NotFound("no project matches")
