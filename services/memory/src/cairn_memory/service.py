"""Memory logic: quotas, supersede, forget, session turns. Plain arguments in, contract models out."""

import uuid
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from cairn_contracts import limits
from cairn_contracts.errors import Conflict, InvalidProjectId, NotFound, QuotaExceeded, ValidationFailed
from cairn_contracts.memory import (
    ListMemoriesRequest,
    LongMemoryWrite,
    Memory,
    SessionTurn,
    SessionTurnWrite,
    Source,
)
from cairn_memory.settings import MemorySettings
from cairn_memory.store import (
    MemoryStore,
    append_batch_under_caps,
    append_under_caps,
    insert_batch_under_quota,
    insert_under_quota,
)
from cairn_scope import Scope
from cairn_servicekit.batching import Coalescer, declare_kinds, in_one_transaction
from cairn_storage.convert import memory_out, turn_out
from cairn_storage.models import Memory as MemoryRow
from cairn_storage.models import SessionMemory
from cairn_storage.usage import UsageMeter

OnCreated = Callable[[Memory, Scope], Awaitable[None]]
declare_kinds("memory", "turn")  # this service's write batches


class MemoryNotFound(NotFound):
    default_message = "no such memory"


class MemoryService:
    def __init__(
        self,
        sessionmaker: async_sessionmaker[AsyncSession],
        engine: AsyncEngine,
        settings: MemorySettings,
        on_created: OnCreated,
        meter: UsageMeter,
    ) -> None:
        self._sm = sessionmaker
        self._engine = engine  # write batches: one transaction each
        # A write alone is one statement: no BEGIN/COMMIT round trips (shares the engine's pool).
        self._autocommit = engine.execution_options(isolation_level="AUTOCOMMIT")
        self._settings = settings
        self._on_created = on_created
        self._meter = meter
        batching = {"max_batch": settings.write_batch_max, "lanes": settings.write_batch_lanes}
        self._writes = Coalescer("memory", self._insert_one, self._insert_batch, **batching)
        self._appends = Coalescer("turn", self._append_one, self._append_batch, **batching)

    async def _insert_one(self, row: MemoryRow) -> datetime | None:
        async with self._autocommit.connect() as conn:
            return await insert_under_quota(conn, row, self._settings.default_memory_quota)

    async def _insert_batch(self, rows: Sequence[MemoryRow]) -> list[datetime | None]:
        quota = self._settings.default_memory_quota
        return await in_one_transaction(
            self._engine, lambda conn: insert_batch_under_quota(conn, rows, quota)
        )

    def _caps(self) -> tuple[int, int]:
        return self._settings.session_max_turns, self._settings.session_max_bytes

    async def _append_one(self, row: SessionMemory) -> tuple[int, datetime] | None:
        async with self._autocommit.connect() as conn:
            return await append_under_caps(conn, row, *self._caps())

    async def _append_batch(self, rows: Sequence[SessionMemory]) -> list[tuple[int, datetime] | None]:
        caps = self._caps()
        return await in_one_transaction(self._engine, lambda conn: append_batch_under_caps(conn, rows, *caps))

    async def _check_project(self, store: MemoryStore, scope: Scope, project_id: str | None) -> None:
        if project_id and not await store.project_in_tenant(project_id, scope.tenant_id):
            raise InvalidProjectId()  # a foreign project reads exactly like a malformed one

    def _row(
        self,
        scope: Scope,
        body: LongMemoryWrite,
        source: Source,
        source_session_id: str | None,
        row_id: uuid.UUID | None = None,
    ) -> MemoryRow:
        return MemoryRow(
            id=row_id or uuid.uuid4(),
            tenant_id=uuid.UUID(scope.tenant_id),
            subject_id=scope.subject_id,
            project_id=uuid.UUID(body.project_id) if body.project_id else None,
            text=body.text,
            confidence=body.confidence,
            source=source.value,
            source_session_id=source_session_id,
            tags=list(dict.fromkeys(body.tags)),
            metadata_=body.metadata,
            recall_count=0,
            last_recalled_at=None,
        )

    async def remember(
        self,
        scope: Scope,
        body: LongMemoryWrite,
        *,
        source: Source = Source.explicit,
        source_session_id: str | None = None,
        write_id: uuid.UUID | None = None,
    ) -> Memory:
        """Insert a live memory: the quota check, the project check and the insert are one statement,
        committed with the writes that arrived alongside it (`Coalescer`).

        With a `write_id` (an idempotent write), the row takes it as its id, and a retry whose first
        attempt committed gets that row back (never a twin: the id is the primary key). A batch that
        failed runs its rows again alone with the same ids, so a row whose batch did commit after all (a
        connection lost in the COMMIT) is found the same way.
        """
        row = self._row(scope, body, source, source_session_id, write_id)
        created = await self._writes.submit(row)
        if created is None:
            memory = await self._refused(scope, body, row.id)
        else:
            row.created_at = created
            row.superseded_by, row.embedding_content_hash = None, None
            memory = memory_out(row)
            self._meter.add(scope.tenant_id, "writes")
        # Also on a retry: the first attempt may have died before announcing the row (Msg-Id dedupes).
        await self._on_created(memory, scope)
        return memory

    async def _refused(self, scope: Scope, body: LongMemoryWrite, row_id: uuid.UUID) -> Memory:
        """Why `insert_under_quota` wrote nothing: the row already there (a retry), or the error to raise."""
        async with self._sm() as session:
            store = MemoryStore(session)
            existing = await store.get(scope, str(row_id))
            if existing is not None:
                return memory_out(existing)
            await self._check_project(store, scope, body.project_id)
            quota = await store.quota(scope.tenant_id, self._settings.default_memory_quota)
        raise QuotaExceeded(f"this subject already holds its quota of {quota} live memories")

    async def supersede(self, scope: Scope, memory_id: str, body: LongMemoryWrite) -> Memory:
        """Write the newer memory and point the old one at it; live count is unchanged, so no quota check."""
        async with self._sm.begin() as session:
            store = MemoryStore(session)
            old = await store.get(scope, memory_id, for_update=True)
            if old is None:
                raise MemoryNotFound()
            if old.superseded_by is not None:
                raise Conflict("this memory is already superseded; supersede its successor")
            await self._check_project(store, scope, body.project_id)
            if body.project_id is None and old.project_id is not None:
                body = body.model_copy(update={"project_id": str(old.project_id)})  # stays in its partition
            new = await store.add(self._row(scope, body, Source.explicit, None))
            old.superseded_by = new.id
            memory = memory_out(new)
        self._meter.add(scope.tenant_id, "writes")
        await self._on_created(memory, scope)
        return memory

    async def get(self, scope: Scope, memory_id: str) -> Memory:
        async with self._sm() as session:
            row = await MemoryStore(session).get(scope, memory_id)
        if row is None:
            raise MemoryNotFound()
        return memory_out(row)

    async def forget(self, scope: Scope, memory_id: str) -> Memory:
        """Delete outright. A superadmin (impersonating a tenant) may delete any memory of that tenant."""
        async with self._sm.begin() as session:
            row = await MemoryStore(session).delete(scope, memory_id, all_subjects=scope.is_superadmin)
            if row is None:
                raise MemoryNotFound()
            return memory_out(row, with_subject=scope.is_superadmin)

    async def list_memories(self, scope: Scope, query: ListMemoriesRequest) -> tuple[list[Memory], int]:
        oversight = query.all_subjects and scope.is_superadmin
        query = query.model_copy(update={"all_subjects": oversight})
        async with self._sm() as session:
            rows, total = await MemoryStore(session).list_memories(scope, query)
        return [memory_out(r, with_subject=oversight) for r in rows], total

    def _expiry(self, body: SessionTurnWrite, now: datetime) -> datetime:
        if body.expires_at is not None and body.ttl_seconds is not None:
            raise ValidationFailed("invalid_expiry", "give expires_at or ttl_seconds, not both")
        if body.expires_at is not None:
            expires = body.expires_at if body.expires_at.tzinfo else body.expires_at.replace(tzinfo=UTC)
            if expires <= now:
                raise ValidationFailed("invalid_expiry", "expires_at must be in the future")
            if expires > now + timedelta(seconds=limits.SESSION_TTL_MAX_SECONDS):
                raise ValidationFailed(
                    "invalid_expiry", f"expires_at is more than {limits.SESSION_TTL_MAX_SECONDS}s away"
                )
            return expires
        ttl = body.ttl_seconds or self._settings.session_default_ttl_seconds
        return now + timedelta(seconds=ttl)

    async def append_turn(
        self, scope: Scope, body: SessionTurnWrite, write_id: uuid.UUID | None = None
    ) -> SessionTurn:
        """Append a turn; with a `write_id`, a retry whose first attempt committed gets that turn back."""
        row = SessionMemory(
            tenant_id=uuid.UUID(scope.tenant_id),
            subject_id=scope.subject_id,
            session_id=body.session_id,
            role=body.role.value,
            content=body.content,
            metadata_=body.metadata,
            expires_at=self._expiry(body, datetime.now(UTC)),
            write_id=write_id,
        )
        written = await self._appends.submit(row)
        if written is None:
            return await self._append_checked(scope, body, row)
        row.seq, row.created_at = written
        self._meter.add(scope.tenant_id, "session_bytes", len(body.content.encode()))
        return turn_out(row)

    async def _append_checked(self, scope: Scope, body: SessionTurnWrite, row: SessionMemory) -> SessionTurn:
        """The exact path: the retried append's turn, or the caps counted over live turns only."""
        async with self._sm.begin() as session:
            store = MemoryStore(session)
            if row.write_id is not None and (existing := await store.turn_by_write_id(scope, row.write_id)):
                return turn_out(existing)
            await store.lock_session(scope, body.session_id)
            await self._check_session_caps(store, scope, body)
            turn = turn_out(await store.append_turn(row))
        self._meter.add(scope.tenant_id, "session_bytes", len(body.content.encode()))
        return turn

    async def _check_session_caps(self, store: MemoryStore, scope: Scope, body: SessionTurnWrite) -> None:
        turns, size = await store.session_usage(scope, body.session_id)
        cap_turns, cap_bytes = self._settings.session_max_turns, self._settings.session_max_bytes
        if turns >= cap_turns:
            raise ValidationFailed(
                "session_turn_limit", f"this session already holds its cap of {cap_turns} live turns"
            )
        if size + len(body.content.encode()) > cap_bytes:
            raise ValidationFailed(
                "session_byte_limit",
                f"this turn would take the session past its cap of {cap_bytes} content bytes ({size} used)",
            )

    async def history(
        self, scope: Scope, session_id: str, limit: int, offset: int
    ) -> tuple[list[SessionTurn], int]:
        async with self._sm() as session:
            rows, total = await MemoryStore(session).history(scope, session_id, limit, offset)
        return [turn_out(r) for r in rows], total
