"""Every query of the memory service. Scoped tables are reached only through `cairn_scope`'s guard."""

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import Select, delete, func, select, text
from sqlalchemy.ext.asyncio import AsyncSession

from cairn_contracts.memory import ListMemoriesRequest
from cairn_scope import Scope, check_scoped, scoped_delete, scoped_select
from cairn_storage.models import Memory, Project, SessionMemory, Tenant


def as_uuid(value: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(value)
    except (ValueError, TypeError):
        return None


class MemoryStore:
    """Queries over one AsyncSession; the caller owns the transaction."""

    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def lock_scope(self, scope: Scope) -> None:
        """Serialise quota-checked writes of one (tenant, subject) until the transaction ends."""
        await self.session.execute(
            text("SELECT pg_advisory_xact_lock(hashtextextended(:k, 0))"),
            {"k": f"memory-quota:{scope.tenant_id}:{scope.subject_id}"},
        )

    async def quota(self, tenant_id: str, default: int) -> int:
        value = await self.session.scalar(
            select(Tenant.memory_quota).where(Tenant.id == uuid.UUID(tenant_id))
        )
        return value or default

    async def project_in_tenant(self, project_id: str, tenant_id: str) -> bool:
        found = await self.session.scalar(
            select(Project.id).where(
                Project.id == uuid.UUID(project_id), Project.tenant_id == uuid.UUID(tenant_id)
            )
        )
        return found is not None

    async def live_count(self, scope: Scope) -> int:
        stmt = check_scoped(
            select(func.count())
            .select_from(Memory)
            .where(
                Memory.tenant_id == scope.tenant_id,
                Memory.subject_id == scope.subject_id,
                Memory.superseded_by.is_(None),
            ),
            scope,
        )
        return int(await self.session.scalar(stmt) or 0)

    async def add(self, row: Memory) -> Memory:
        self.session.add(row)
        await self.session.flush()  # eager defaults: created_at (and seq) come back with the INSERT
        return row

    async def get(
        self, scope: Scope, memory_id: str, *, all_subjects: bool = False, for_update: bool = False
    ) -> Memory | None:
        mid = as_uuid(memory_id)
        if mid is None:
            return None
        stmt = scoped_select(Memory, scope, all_subjects=all_subjects).where(Memory.id == mid)
        if for_update:
            stmt = stmt.with_for_update()
        row: Memory | None = (await self.session.execute(stmt)).scalar_one_or_none()
        return row

    async def delete(self, scope: Scope, memory_id: str, *, all_subjects: bool = False) -> Memory | None:
        mid = as_uuid(memory_id)
        if mid is None:
            return None
        stmt = (
            scoped_delete(Memory, scope, all_subjects=all_subjects).where(Memory.id == mid).returning(Memory)
        )
        return (await self.session.execute(stmt)).scalar_one_or_none()

    def _list_filter(self, scope: Scope, query: ListMemoriesRequest) -> Select[Any]:
        stmt = scoped_select(Memory, scope, all_subjects=query.all_subjects)
        if not query.include_superseded:
            stmt = stmt.where(Memory.superseded_by.is_(None))
        if query.source is not None:
            stmt = stmt.where(Memory.source == query.source.value)
        if query.tag:
            stmt = stmt.where(Memory.tags.contains([query.tag]))
        if query.project_id:
            stmt = stmt.where(Memory.project_id == uuid.UUID(query.project_id))
        return stmt

    async def list_memories(self, scope: Scope, query: ListMemoriesRequest) -> tuple[list[Memory], int]:
        stmt = self._list_filter(scope, query)
        total = await self.session.scalar(select(func.count()).select_from(stmt.subquery()))
        rows = (
            (
                await self.session.execute(
                    stmt.order_by(Memory.created_at.desc(), Memory.id).limit(query.limit).offset(query.offset)
                )
            )
            .scalars()
            .all()
        )
        return list(rows), int(total or 0)

    async def turn_by_write_id(self, scope: Scope, write_id: uuid.UUID) -> SessionMemory | None:
        stmt = scoped_select(SessionMemory, scope).where(SessionMemory.write_id == write_id)
        row: SessionMemory | None = (await self.session.execute(stmt)).scalar_one_or_none()
        return row

    async def lock_session(self, scope: Scope, session_id: str) -> None:
        """Serialise appends to one session of one (tenant, subject): its caps are checked race-free."""
        await self.session.execute(
            text("SELECT pg_advisory_xact_lock(hashtextextended(:k, 0))"),
            {"k": f"session-cap:{scope.tenant_id}:{scope.subject_id}:{session_id}"},
        )

    async def session_usage(self, scope: Scope, session_id: str) -> tuple[int, int]:
        """(live turns, their content bytes) of one session of the scope."""
        stmt = check_scoped(
            select(func.count(), func.coalesce(func.sum(func.octet_length(SessionMemory.content)), 0)).where(
                SessionMemory.tenant_id == scope.tenant_id,
                SessionMemory.subject_id == scope.subject_id,
                SessionMemory.session_id == session_id,
                SessionMemory.expires_at > func.now(),
            ),
            scope,
        )
        turns, size = (await self.session.execute(stmt)).one()
        return int(turns), int(size)

    async def append_turn(self, row: SessionMemory) -> SessionMemory:
        self.session.add(row)
        await self.session.flush()  # eager defaults: created_at (and seq) come back with the INSERT
        return row

    async def history(
        self, scope: Scope, session_id: str, limit: int, offset: int
    ) -> tuple[list[SessionMemory], int]:
        stmt = scoped_select(SessionMemory, scope).where(
            SessionMemory.session_id == session_id, SessionMemory.expires_at > func.now()
        )
        total = await self.session.scalar(select(func.count()).select_from(stmt.subquery()))
        rows = (
            await self.session.execute(stmt.order_by(SessionMemory.seq).limit(limit).offset(offset))
        ).scalars()
        return list(rows.all()), int(total or 0)


async def prune_expired_turns(session: AsyncSession, now: datetime | None = None) -> int:
    """Maintenance across every scope (no caller scope exists here): delete expired session turns."""
    cutoff = now if now is not None else func.now()
    result = await session.execute(delete(SessionMemory).where(SessionMemory.expires_at <= cutoff))
    return int(result.rowcount or 0)  # type: ignore[attr-defined]
