"""Every query of the memory service. Scoped tables are reached only through `cairn_scope`'s guard."""

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from pydantic_core import to_json
from sqlalchemy import Select, String, bindparam, delete, func, select, text
from sqlalchemy.dialects.postgresql import ARRAY, JSONB
from sqlalchemy.dialects.postgresql import UUID as PgUUID
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from cairn_contracts.memory import ListMemoriesRequest
from cairn_scope import Scope, check_scoped, scoped_delete, scoped_select
from cairn_servicekit.batching import distinct_rounds
from cairn_storage.models import Memory, Project, SessionMemory, Tenant


def as_uuid(value: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(value)
    except (ValueError, TypeError):
        return None


# The quota-checked write as one statement (one round trip, its own transaction). The CTE locks the
# subject's live-count row, creating it at 0 on the subject's first write: that lock serialises the
# subject's writes, and ON CONFLICT DO UPDATE returns the row's latest committed count even when it had to
# wait for it. The insert happens only under quota and only for the tenant's own project (or none); the
# insert trigger (migration 0013) then adds the row to the count. A write id already taken (an idempotent
# retry whose first attempt committed) inserts nothing, like a refusal: the caller asks why.
_REMEMBER = text(
    """
    WITH counter AS (
        INSERT INTO memory_live_counts AS c (tenant_id, subject_id, live)
        VALUES (:tenant_id, :subject_id, 0)
        ON CONFLICT (tenant_id, subject_id) DO UPDATE SET live = c.live
        RETURNING c.live
    )
    INSERT INTO memories (
        id, tenant_id, subject_id, project_id, text, confidence, source, source_session_id, tags,
        metadata
    )
    SELECT :id, :tenant_id, :subject_id, :project_id, :text, :confidence, :source, :source_session_id,
        :tags, :metadata
    FROM counter
    WHERE counter.live < COALESCE((SELECT memory_quota FROM tenants WHERE id = :tenant_id), :default_quota)
        AND (:project_id IS NULL
             OR EXISTS (SELECT 1 FROM projects WHERE id = :project_id AND tenant_id = :tenant_id))
    ON CONFLICT (id) DO NOTHING
    RETURNING created_at
    """
).bindparams(
    bindparam("id", type_=PgUUID(as_uuid=True)),
    bindparam("tenant_id", type_=PgUUID(as_uuid=True)),
    bindparam("project_id", type_=PgUUID(as_uuid=True)),
    bindparam("tags", type_=ARRAY(String)),
    bindparam("metadata", type_=JSONB),
)


async def insert_under_quota(conn: AsyncConnection, row: Memory, default_quota: int) -> datetime | None:
    """Insert `row` if its subject is under quota and its project is its tenant's; its `created_at`, or
    None when nothing was written (over quota, a foreign project, or its id already taken)."""
    params = {
        "id": row.id,
        "tenant_id": row.tenant_id,
        "subject_id": row.subject_id,
        "project_id": row.project_id,
        "text": row.text,
        "confidence": row.confidence,
        "source": row.source,
        "source_session_id": row.source_session_id,
        "tags": row.tags,
        "metadata": row.metadata_,
        "default_quota": default_quota,
    }
    created: datetime | None = (await conn.execute(_REMEMBER, params)).scalar_one_or_none()
    return created


# A batch of any subjects' writes as one statement: migration 0017's function runs, per subject and under
# that subject's own row-level security, the quota-checked insert `_REMEMBER` runs for one row (its
# docstring says how the quota stays exact across a subject's rows). Rows travel as one jsonb array: one
# parameter, encoded once.
_REMEMBER_BATCH = text(
    "SELECT row_n, row_created_at FROM cairn_remember_batch(CAST(:rows AS jsonb), :default_quota)"
)


def _memory_json(n: int, row: Memory) -> dict[str, Any]:
    return {
        "n": n,
        "tenant_id": row.tenant_id,
        "subject_id": row.subject_id,
        "id": row.id,
        "project_id": row.project_id,
        "text": row.text,
        "confidence": row.confidence,
        "source": row.source,
        "source_session_id": row.source_session_id,
        "tags": row.tags,
        "metadata": row.metadata_,
    }


async def insert_batch_under_quota(
    conn: AsyncConnection, rows: Sequence[Memory], default_quota: int
) -> list[datetime | None]:
    """`insert_under_quota` for each row, inside the one transaction the caller opened on `conn`: one
    statement for the whole batch (`_REMEMBER_BATCH`; an id repeated in the batch goes to a second
    statement), the quota exact across each subject's rows. Results come back in the given order."""
    results: list[datetime | None] = [None] * len(rows)
    for indexes in distinct_rounds([row.id for row in rows]):
        params = {
            "rows": to_json([_memory_json(i, rows[i]) for i in indexes]).decode(),
            "default_quota": default_quota,
        }
        for written in await conn.execute(_REMEMBER_BATCH, params):
            results[written.row_n] = written.row_created_at
    return results


# An append as one statement when the session's counts (turns and bytes, expired-but-unpruned turns
# included: an upper bound) show it under both caps. Locking the session's count row serialises its
# appends, as `MemoryStore.lock_session` does for the exact check; a taken write id inserts nothing.
_APPEND = text(
    """
    WITH counter AS (
        INSERT INTO session_turn_counts AS c (tenant_id, subject_id, session_id, turns, bytes)
        VALUES (:tenant_id, :subject_id, :session_id, 0, 0)
        ON CONFLICT (tenant_id, subject_id, session_id) DO UPDATE SET turns = c.turns
        RETURNING c.turns, c.bytes
    )
    INSERT INTO session_memories (
        tenant_id, subject_id, session_id, role, content, metadata, expires_at, write_id
    )
    SELECT :tenant_id, :subject_id, :session_id, :role, :content, :metadata, :expires_at, :write_id
    FROM counter
    WHERE counter.turns < :max_turns AND counter.bytes + octet_length(:content) <= :max_bytes
    ON CONFLICT (tenant_id, subject_id, write_id) WHERE write_id IS NOT NULL DO NOTHING
    RETURNING seq, created_at
    """
).bindparams(
    bindparam("tenant_id", type_=PgUUID(as_uuid=True)),
    bindparam("write_id", type_=PgUUID(as_uuid=True)),
    bindparam("metadata", type_=JSONB),
)


async def append_under_caps(
    conn: AsyncConnection, row: SessionMemory, max_turns: int, max_bytes: int
) -> tuple[int, datetime] | None:
    """Append `row` if the session's upper-bound counts leave room; its (seq, created_at), or None when
    the exact check must decide (or its write id is already taken)."""
    params = {
        "tenant_id": row.tenant_id,
        "subject_id": row.subject_id,
        "session_id": row.session_id,
        "role": row.role,
        "content": row.content,
        "metadata": row.metadata_,
        "expires_at": row.expires_at,
        "write_id": row.write_id,
        "max_turns": max_turns,
        "max_bytes": max_bytes,
    }
    written = (await conn.execute(_APPEND, params)).one_or_none()
    return (int(written.seq), written.created_at) if written is not None else None


# A batch of any sessions' appends as one statement: migration 0017's function runs, per session and under
# its subject's own row-level security, `_APPEND` over the session's turns. Under the upper-bound counts
# the turns that fit are a prefix in submission order; the rest come back without a seq and are left to
# the exact check (None), as on the single path (a turn whose write id is taken too: the exact check
# finds its turn). Each turn takes its seq before the insert, in submission order.
_APPEND_BATCH = text(
    "SELECT row_n, row_seq, row_created_at"
    " FROM cairn_append_batch(CAST(:rows AS jsonb), :max_turns, :max_bytes)"
)


def _turn_json(n: int, row: SessionMemory) -> dict[str, Any]:
    return {
        "n": n,
        "tenant_id": row.tenant_id,
        "subject_id": row.subject_id,
        "session_id": row.session_id,
        "role": row.role,
        "content": row.content,
        "metadata": row.metadata_,
        "expires_at": row.expires_at,
        "write_id": row.write_id,
    }


async def append_batch_under_caps(
    conn: AsyncConnection, rows: Sequence[SessionMemory], max_turns: int, max_bytes: int
) -> list[tuple[int, datetime] | None]:
    """`append_under_caps` for each row, inside the one transaction the caller opened on `conn`: one
    statement for the whole batch (`_APPEND_BATCH`). A session's turns keep their submission order, so
    their seqs do too."""
    params = {
        "rows": to_json([_turn_json(n, row) for n, row in enumerate(rows)]).decode(),
        "max_turns": max_turns,
        "max_bytes": max_bytes,
    }
    results: list[tuple[int, datetime] | None] = [None] * len(rows)
    for written in await conn.execute(_APPEND_BATCH, params):
        results[written.row_n] = (int(written.row_seq), written.row_created_at)
    return results


class MemoryStore:
    """Queries over one AsyncSession; the caller owns the transaction."""

    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def lock_live_count(self, scope: Scope) -> int:
        """Lock the subject's live-count row until the transaction ends (serialising its quota-checked
        writes, as `insert_under_quota` does) and return its live memories."""
        live = await self.session.scalar(
            text(
                "INSERT INTO memory_live_counts AS c (tenant_id, subject_id, live) VALUES (:t, :s, 0) "
                "ON CONFLICT (tenant_id, subject_id) DO UPDATE SET live = c.live RETURNING c.live"
            ),
            {"t": uuid.UUID(scope.tenant_id), "s": scope.subject_id},
        )
        return int(live or 0)

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
        # Read first, then delete: a DELETE's RETURNING carries the row's columns only, not the recall counters
        # read beside it (which cascade with it).
        row = await self.get(scope, memory_id, all_subjects=all_subjects, for_update=True)
        if row is None:
            return None
        await self.session.execute(
            scoped_delete(Memory, scope, all_subjects=all_subjects).where(Memory.id == mid)
        )
        return row

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
        """Serialise appends to one session of one (tenant, subject), on the count row `append_under_caps`
        locks too: its caps are checked race-free."""
        await self.session.execute(
            text(
                "INSERT INTO session_turn_counts AS c (tenant_id, subject_id, session_id) VALUES (:t, :s, :id) "
                "ON CONFLICT (tenant_id, subject_id, session_id) DO UPDATE SET turns = c.turns"
            ),
            {"t": uuid.UUID(scope.tenant_id), "s": scope.subject_id, "id": session_id},
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
