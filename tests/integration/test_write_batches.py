"""Micro-batched writes (`cairn_memory.batching`) against real PostgreSQL, through the services' RLS-bound
login and the engine's scope hook: a batch keeps every per-write rule of the single-statement path."""

import asyncio
import uuid
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime, timedelta

import asyncpg
import pytest
from prometheus_client import REGISTRY
from sqlalchemy import event, text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from cairn_devstack.cairn import CairnStack
from cairn_memory.store import (
    append_batch_under_caps,
    append_under_caps,
    insert_batch_under_quota,
    insert_under_quota,
)
from cairn_servicekit.batching import Coalescer, in_one_transaction
from cairn_storage import create_engine
from cairn_storage.models import Memory, SessionMemory


def memory(tenant: uuid.UUID, subject: str, body: str = "a fact") -> Memory:
    return Memory(
        id=uuid.uuid4(),
        tenant_id=tenant,
        subject_id=subject,
        project_id=None,
        text=body,
        confidence=1.0,
        source="explicit",
        source_session_id=None,
        tags=[],
        metadata_={},
    )


def turn(tenant: uuid.UUID, session_id: str, content: str = "hello") -> SessionMemory:
    return SessionMemory(
        tenant_id=tenant,
        subject_id="s",
        session_id=session_id,
        role="user",
        content=content,
        metadata_={},
        expires_at=datetime.now(UTC) + timedelta(hours=1),
        write_id=None,
    )


@pytest.fixture
async def service_engine(stack: CairnStack) -> AsyncIterator[AsyncEngine]:
    """The login every service uses: row-level security applies, the scope hook sets it per statement."""
    engine = create_engine(stack.service_database_url, pool_size=4, max_overflow=0)
    yield engine
    await engine.dispose()


async def rows_of(stack: CairnStack, tenant: uuid.UUID) -> dict[str, int]:
    engine = create_engine(stack.database_url, pool_size=1).execution_options(cairn_maintenance="test_check")
    try:
        async with engine.connect() as conn:
            rows = await conn.execute(
                text("SELECT subject_id, count(*) FROM memories WHERE tenant_id = :t GROUP BY subject_id"),
                {"t": tenant},
            )
            return {r[0]: r[1] for r in rows}
    finally:
        await engine.dispose()


def fallbacks(kind: str) -> float:
    value = REGISTRY.get_sample_value("cairn_write_batch_fallbacks_total", {"kind": kind})
    return value or 0.0


async def test_a_batch_stops_each_subject_exactly_at_its_quota(
    stack: CairnStack, service_engine: AsyncEngine
) -> None:
    tenants = uuid.uuid4(), uuid.uuid4()
    # Interleaved subjects of two tenants; the quota is 4 per subject and subject "a" of tenant 0 asks 7.
    rows = [memory(tenants[i % 2], "a" if i % 3 else "b") for i in range(6)]
    rows += [memory(tenants[0], "a") for _ in range(5)]
    results = await in_one_transaction(service_engine, lambda conn: insert_batch_under_quota(conn, rows, 4))
    wanted = {}
    for row, created in zip(rows, results, strict=True):
        key = (row.tenant_id, row.subject_id)
        wanted[key] = wanted.get(key, 0) + 1
        assert (created is not None) == (wanted[key] <= 4), (key, wanted[key])
    assert await rows_of(stack, tenants[0]) == {"a": 4, "b": 1}
    assert await rows_of(stack, tenants[1]) == {"a": 2, "b": 1}


async def test_one_bad_write_fails_alone_and_its_neighbours_commit_once(
    stack: CairnStack, service_engine: AsyncEngine
) -> None:
    tenant = uuid.uuid4()
    autocommit = service_engine.execution_options(isolation_level="AUTOCOMMIT")

    async def one(row: Memory) -> datetime | None:
        async with autocommit.connect() as conn:
            return await insert_under_quota(conn, row, 100)

    async def batch(rows: Sequence[Memory]) -> list[datetime | None]:
        return await in_one_transaction(
            service_engine, lambda conn: insert_batch_under_quota(conn, rows, 100)
        )

    writes = Coalescer("memory", one, batch, max_batch=64, lanes=1)
    before = fallbacks("memory")
    # PostgreSQL refuses a NUL byte in text: that statement fails, and with it its batch's transaction.
    rows = [memory(tenant, f"s{i}", "bad \x00 byte" if i == 3 else "fine") for i in range(8)]
    outcomes = await asyncio.gather(*(writes.submit(r) for r in rows), return_exceptions=True)
    assert fallbacks("memory") == before + 1
    assert isinstance(outcomes[3], Exception)
    assert all(isinstance(o, datetime) for i, o in enumerate(outcomes) if i != 3), outcomes
    assert await rows_of(stack, tenant) == {f"s{i}": 1 for i in range(8) if i != 3}


async def test_concurrent_writes_share_batches_without_a_fallback(
    stack: CairnStack, service_engine: AsyncEngine
) -> None:
    tenant = uuid.uuid4()
    autocommit = service_engine.execution_options(isolation_level="AUTOCOMMIT")

    async def one(row: Memory) -> datetime | None:
        async with autocommit.connect() as conn:
            return await insert_under_quota(conn, row, 5)

    async def batch(rows: Sequence[Memory]) -> list[datetime | None]:
        return await in_one_transaction(service_engine, lambda conn: insert_batch_under_quota(conn, rows, 5))

    writes = Coalescer("memory", one, batch, max_batch=16, lanes=2)
    before = fallbacks("memory")
    # 20 subjects of one tenant, 8 writes each against a quota of 5, from two lanes at once.
    rows = [memory(tenant, f"s{i % 20}") for i in range(160)]
    outcomes = await asyncio.gather(*(writes.submit(r) for r in rows))
    assert fallbacks("memory") == before  # every batch committed: RLS saw each statement's own scope
    assert sum(o is not None for o in outcomes) == 100
    assert await rows_of(stack, tenant) == {f"s{i}": 5 for i in range(20)}


async def test_a_session_batch_keeps_submission_order_and_its_caps(service_engine: AsyncEngine) -> None:
    tenant = uuid.uuid4()
    rows = [turn(tenant, "s1", f"turn {i}") for i in range(5)] + [turn(tenant, "s2"), turn(tenant, "s2")]
    rows.insert(2, turn(tenant, "s2"))
    results = await in_one_transaction(
        service_engine, lambda conn: append_batch_under_caps(conn, rows, 3, 1000)
    )
    s1 = [r for row, r in zip(rows, results, strict=True) if row.session_id == "s1"]
    assert [r is not None for r in s1] == [True, True, True, False, False]
    seqs = [r[0] for r in s1 if r is not None]
    assert seqs == sorted(seqs)
    assert all(r is not None for row, r in zip(rows, results, strict=True) if row.session_id == "s2")
    # The next append to the full session is left to the exact check (None), as on the single path.
    autocommit = service_engine.execution_options(isolation_level="AUTOCOMMIT")
    async with autocommit.connect() as conn:
        assert await append_under_caps(conn, turn(tenant, "s1"), 3, 1000) is None


def statements(engine: AsyncEngine) -> list[str]:
    """Every statement `engine` sends from now on (for counting round trips)."""
    sent: list[str] = []

    def record(conn: object, cursor: object, statement: str, *args: object) -> None:
        sent.append(statement)

    event.listen(engine.sync_engine, "before_cursor_execute", record)
    return sent


async def test_many_subjects_in_one_statement_each_under_its_own_scope(
    stack: CairnStack, service_engine: AsyncEngine
) -> None:
    tenants = uuid.uuid4(), uuid.uuid4()
    rows = [memory(tenants[i % 2], f"s{i % 5}") for i in range(20)]
    turns = [turn(tenants[i % 2], f"session-{i % 3}") for i in range(9)]
    sent = statements(service_engine)
    scope_after = []

    async def work(conn: AsyncConnection) -> None:
        # The caller's own scope, as the engine hook would have set it, survives the batch.
        await conn.execute(text("SELECT set_config('cairn.tenant_id', :t, true)"), {"t": str(tenants[1])})
        await insert_batch_under_quota(conn, rows, 10)
        await append_batch_under_caps(conn, turns, 10, 1000)
        scope_after.append(await conn.scalar(text("SELECT current_setting('cairn.tenant_id')")))
        scope_after.append(await conn.scalar(text("SELECT current_setting('cairn.subject_id', true)")))

    await in_one_transaction(service_engine, work)
    assert len([s for s in sent if "cairn_remember_batch" in s or "cairn_append_batch" in s]) == 2
    assert scope_after == [str(tenants[1]), ""]
    assert await rows_of(stack, tenants[0]) == {f"s{i}": 2 for i in range(5)}
    assert await rows_of(stack, tenants[1]) == {f"s{i}": 2 for i in range(5)}
    # Under row-level security (the service's login, raw driver: no hook), each scope reads only its rows.
    conn = await asyncpg.connect(stack.service_database_url)
    try:
        async with conn.transaction():
            await conn.execute("SELECT set_config('cairn.tenant_id', $1, true)", str(tenants[0]))
            await conn.execute("SELECT set_config('cairn.subject_id', 's3', true)")
            assert await conn.fetch("SELECT subject_id FROM memories") == [("s3",), ("s3",)]
            assert await conn.fetchval("SELECT count(*) FROM session_memories") == 0  # the turns are "s"'s
        for tenant, turns_seen in ((tenants[0], 5), (tenants[1], 4)):
            async with conn.transaction():
                await conn.execute("SELECT set_config('cairn.tenant_id', $1, true)", str(tenant))
                await conn.execute("SELECT set_config('cairn.subject_id', 's', true)")
                assert await conn.fetchval("SELECT count(*) FROM memories") == 0
                assert await conn.fetchval("SELECT count(*) FROM session_memories") == turns_seen
    finally:
        await conn.close()


async def test_a_subjects_writes_in_a_batch_are_one_statement_and_only_writable_rows_count(
    stack: CairnStack, service_engine: AsyncEngine
) -> None:
    tenant = uuid.uuid4()
    autocommit = service_engine.execution_options(isolation_level="AUTOCOMMIT")
    taken = memory(tenant, "a")
    async with autocommit.connect() as conn:
        assert await insert_under_quota(conn, taken, 4) is not None  # 1 of 4 live
    foreign = memory(tenant, "a")
    foreign.project_id = uuid.uuid4()  # not a project of this tenant: written nowhere, counts nothing
    retry = memory(tenant, "a")
    retry.id = taken.id  # an idempotent retry whose first attempt committed: nothing new, counts nothing
    fresh = [memory(tenant, "a", f"fact {i}") for i in range(5)]
    twin = memory(tenant, "a")
    twin.id = fresh[0].id  # the same write twice in one batch: one row
    rows = [fresh[0], foreign, retry, twin, *fresh[1:]]
    sent = statements(service_engine)
    results = await in_one_transaction(service_engine, lambda conn: insert_batch_under_quota(conn, rows, 4))
    # The distinct ids (the function's second pass over the four it left out runs inside it), then the twin.
    assert len([s for s in sent if "cairn_remember_batch" in s]) == 2
    assert not [s for s in sent if "set_config" in s or "INSERT INTO" in s]
    # Quota 4 with 1 live: the first three writable rows (fresh 0, 1, 2) are written, in submission order.
    assert [r is not None for r in results] == [True, False, False, False, True, True, False, False]
    assert await rows_of(stack, tenant) == {"a": 4}


async def test_a_sessions_appends_in_a_batch_are_one_statement_with_seqs_in_order(
    service_engine: AsyncEngine,
) -> None:
    tenant = uuid.uuid4()
    autocommit = service_engine.execution_options(isolation_level="AUTOCOMMIT")
    first = turn(tenant, "s1", "first")
    first.write_id = uuid.uuid4()
    async with autocommit.connect() as conn:
        assert await append_under_caps(conn, first, 10, 1000) is not None
    retry = turn(tenant, "s1", "first")
    retry.write_id = first.write_id  # its turn is there already: left to the exact check, which finds it
    rows = [turn(tenant, "s1", f"turn {i}") for i in range(3)] + [retry]
    rows += [turn(tenant, "s1", "x" * 300), turn(tenant, "s1", "y" * 700), turn(tenant, "s1", "small")]
    sent = statements(service_engine)
    results = await in_one_transaction(
        service_engine, lambda conn: append_batch_under_caps(conn, rows, 10, 1000)
    )
    assert len(sent) == 1
    assert "cairn_append_batch" in sent[0]
    # 5 + 3 * 6 + 5 bytes counted (the retry too), then 300 fits and 700 does not: the prefix that fits is written, and
    # everything after the first row that does not fit is left to the exact check (None).
    assert [r is not None for r in results] == [True, True, True, False, True, False, False]
    seqs = [r[0] for r in results if r is not None]
    assert seqs == sorted(seqs)
    assert len(set(seqs)) == len(seqs)
