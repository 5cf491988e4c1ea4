"""The scope backstop against real PostgreSQL: the engine hook refuses an unbound statement that never met
`check_scoped`, row-level security hides every row from the services' role when nothing (or something
else) is in scope, and a declared maintenance path sees across subjects and is audited."""

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator

import asyncpg
import pytest
from prometheus_client import REGISTRY
from sqlalchemy import func, select, text

from cairn_devstack.cairn import CairnStack
from cairn_scope import ScopeGuardError
from cairn_storage import create_engine, maintenance_sessionmaker, make_sessionmaker
from cairn_storage.models import Memory, SessionMemory
from cairn_storage.scoped_pool import ScopedReads


@pytest.fixture
async def rows(stack: CairnStack) -> AsyncIterator[tuple[str, str]]:
    """Two tenants with one memory each for subject `a` (and one for `b` in the first), seeded as admin."""
    mine, other = str(uuid.uuid4()), str(uuid.uuid4())
    conn = await asyncpg.connect(stack.database_url)
    try:
        for tenant, subject in ((mine, "a"), (mine, "b"), (other, "a")):
            await conn.execute(
                "INSERT INTO memories (id, tenant_id, subject_id, text) VALUES ($1, $2, $3, $4)",
                uuid.uuid4(),
                uuid.UUID(tenant),
                subject,
                f"{subject} of {tenant}",
            )
        yield mine, other
    finally:
        await conn.execute("DELETE FROM memories WHERE tenant_id = ANY($1::uuid[])", [mine, other])
        await conn.close()


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


async def test_the_services_role_is_bound_by_rls(stack: CairnStack) -> None:
    conn = await asyncpg.connect(stack.service_database_url)
    try:
        role = await conn.fetchrow("SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = current_user")
        assert role is not None
        assert not role["rolsuper"]
        assert not role["rolbypassrls"]
        forced = await conn.fetch(
            "SELECT relname FROM pg_class WHERE relrowsecurity AND relforcerowsecurity "
            "AND relname = ANY($1::text[])",
            ["memories", "memory_chunks", "session_memories", "session_promotions"],
        )
        assert len(forced) == 4
    finally:
        await conn.close()


async def test_keyword_candidates_answer_only_for_the_transactions_own_scope(stack: CairnStack) -> None:
    """`cairn_keyword_candidates` (migration 0015) reads past RLS so the GIN index can serve `@@`; it must
    still return only rows of the scope the calling transaction itself is set to."""
    mine, other = uuid.uuid4(), uuid.uuid4()
    admin = await asyncpg.connect(stack.database_url)
    conn = await asyncpg.connect(stack.service_database_url)
    call = "SELECT count(*) FROM cairn_keyword_candidates($1, $2, to_tsquery('english', 'pernambuco'))"
    try:
        for tenant, subject in ((mine, "a"), (mine, "b"), (other, "a")):
            await admin.execute(
                "INSERT INTO memories (id, tenant_id, subject_id, text) VALUES ($1, $2, $3, 'pernambuco')",
                uuid.uuid4(),
                tenant,
                subject,
            )
        assert await conn.fetchval(call, mine, "a") == 0  # nothing in scope: nothing
        async with conn.transaction():
            await conn.execute("SELECT set_config('cairn.tenant_id', $1, true)", str(mine))
            await conn.execute("SELECT set_config('cairn.subject_id', 'a', true)")
            assert await conn.fetchval(call, mine, "a") == 1  # every row holds the word: only its own
            assert await conn.fetchval(call, mine, "b") == 0
            assert await conn.fetchval(call, other, "a") == 0
        with pytest.raises(asyncpg.InsufficientPrivilegeError):  # the door's owner role is nobody's login
            await conn.execute("SET ROLE cairn_search")
    finally:
        await admin.execute("DELETE FROM memories WHERE tenant_id = ANY($1::uuid[])", [mine, other])
        await admin.close()
        await conn.close()


async def test_an_unscoped_query_through_the_service_role_returns_nothing(
    stack: CairnStack, rows: tuple[str, str]
) -> None:
    mine, _ = rows
    conn = await asyncpg.connect(stack.service_database_url)  # raw driver: no hook, no walker at all
    try:
        assert await conn.fetchval("SELECT count(*) FROM memories WHERE tenant_id = $1", uuid.UUID(mine)) == 0
        assert await conn.fetchval("SELECT count(*) FROM memories") == 0
        async with conn.transaction():
            # Scoped to (mine, a): only that subject's row, whatever the query asks for.
            await conn.execute("SELECT set_config('cairn.tenant_id', $1, true)", mine)
            await conn.execute("SELECT set_config('cairn.subject_id', 'a', true)")
            assert await conn.fetchval("SELECT count(*) FROM memories") == 1
            with pytest.raises(asyncpg.InsufficientPrivilegeError):  # WITH CHECK: no write outside scope
                await conn.execute(
                    "INSERT INTO memories (id, tenant_id, subject_id, text) VALUES ($1, $2, 'b', 'x')",
                    uuid.uuid4(),
                    uuid.UUID(mine),
                )
        assert await conn.fetchval("SELECT count(*) FROM memories") == 0  # the setting died with it
    finally:
        await conn.close()


async def test_the_hook_refuses_a_raw_engine_execute_that_never_called_check_scoped(
    stack: CairnStack, rows: tuple[str, str]
) -> None:
    mine, _ = rows
    engine = create_engine(stack.service_database_url, pool_size=1)
    refused = sample("cairn_scope_guard_refusals_total")
    try:
        async with engine.connect() as conn:
            with pytest.raises(ScopeGuardError, match="subject_id"):
                await conn.execute(select(Memory).where(Memory.tenant_id == uuid.UUID(mine)))
            with pytest.raises(ScopeGuardError, match="raw SQL"):
                await conn.execute(text("SELECT count(*) FROM session_memories"))
            inner = select(SessionMemory.session_id).where(SessionMemory.subject_id == "a")
            nested = select(Memory.id).where(
                Memory.tenant_id == uuid.UUID(mine), Memory.subject_id == "a", Memory.text.in_(inner)
            )
            with pytest.raises(ScopeGuardError, match="tenant_id"):
                await conn.execute(nested)
        assert sample("cairn_scope_guard_refusals_total") == refused + 3
    finally:
        await engine.dispose()


async def test_a_bound_statement_sets_the_scope_rls_then_enforces(
    stack: CairnStack, rows: tuple[str, str]
) -> None:
    mine, other = rows
    engine = create_engine(stack.service_database_url, pool_size=1)
    try:
        async with make_sessionmaker(engine).begin() as session:
            own = await session.scalar(
                select(func.count()).where(Memory.tenant_id == uuid.UUID(mine), Memory.subject_id == "a")
            )
            assert own == 1
            # Raw driver SQL bypasses the walker, but RLS still holds it to the transaction's scope.
            raw = await session.connection()
            seen = (await raw.exec_driver_sql("SELECT tenant_id, subject_id FROM memories")).all()
            assert [(str(t), s) for t, s in seen] == [(mine, "a")]
        assert other != mine
    finally:
        await engine.dispose()


async def test_a_maintenance_path_sees_across_subjects_and_is_audited(
    stack: CairnStack, rows: tuple[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    mine, other = rows
    engine = create_engine(stack.service_database_url, pool_size=1)
    reason = f"test_sweep_{uuid.uuid4().hex[:8]}"
    caplog.set_level(logging.INFO, logger="cairn.scope.maintenance")
    try:
        sweep = maintenance_sessionmaker(make_sessionmaker(engine), reason)
        async with sweep() as session:
            found = await session.scalar(
                text("SELECT count(*) FROM memories WHERE tenant_id = ANY(:t)"), {"t": [mine, other]}
            )
        assert found == 3  # both subjects of mine, and the other tenant's row
        assert sample("cairn_scope_maintenance_statements_total", reason=reason) == 1
        assert any(reason in r.getMessage() for r in caplog.records)
    finally:
        await engine.dispose()


async def test_a_one_statement_autocommit_write_carries_its_scope(
    stack: CairnStack, rows: tuple[str, str]
) -> None:
    """The memory service's quota-checked insert is one statement on an AUTOCOMMIT connection: raw SQL
    that names its scope in `:tenant_id` / `:subject_id`, held to it by RLS at session level."""
    mine, other = rows
    engine = create_engine(stack.service_database_url, pool_size=1)
    insert_row = text(
        "INSERT INTO memories (id, tenant_id, subject_id, text) VALUES (:id, :tenant_id, :subject_id, 'x')"
        " RETURNING id"
    )
    try:
        autocommit = engine.execution_options(isolation_level="AUTOCOMMIT")
        async with autocommit.connect() as conn:
            mid = uuid.uuid4()
            written = await conn.scalar(
                insert_row, {"id": mid, "tenant_id": uuid.UUID(mine), "subject_id": "a"}
            )
            assert written == mid
            # The same connection, the next scope: the setting follows the statement.
            await conn.scalar(
                insert_row, {"id": uuid.uuid4(), "tenant_id": uuid.UUID(other), "subject_id": "z"}
            )
            seen = (await conn.exec_driver_sql("SELECT tenant_id, subject_id FROM memories")).all()
            assert {(str(t), s) for t, s in seen} == {(other, "z")}
    finally:
        await engine.dispose()


# The plain pool for hot constant reads (`cairn_storage.scoped_pool`) keeps the engines' guarantees.
_TEXTS = text(
    "SELECT m.text, m.metadata FROM memories m WHERE m.tenant_id = :tenant_id AND m.subject_id = :subject_id"
)
# Names its scope but filters on the tenant only: row-level security alone holds it to the subject.
_TENANT_WIDE = text(
    "SELECT m.subject_id FROM memories m WHERE m.tenant_id = :tenant_id AND CAST(:subject_id AS text) <> ''"
)


@pytest.fixture
async def one_connection(stack: CairnStack) -> AsyncIterator[ScopedReads]:
    """A scoped pool of one connection: successive calls' scopes alternate on it."""
    reads = await ScopedReads.open(stack.service_database_url, size=1)
    try:
        yield reads
    finally:
        await reads.close()


async def test_scoped_reads_hold_each_call_to_its_own_scope(
    one_connection: ScopedReads, rows: tuple[str, str]
) -> None:
    mine, other = rows
    for _ in range(2):
        for tenant, subject in ((mine, "a"), (mine, "b"), (other, "a")):
            params = {"tenant_id": uuid.UUID(tenant), "subject_id": subject}
            found = await one_connection.fetch(_TEXTS, params)
            assert [(r.text, r.metadata) for r in found] == [(f"{subject} of {tenant}", {})]
            assert [r.subject_id for r in await one_connection.fetch(_TENANT_WIDE, params)] == [subject]


async def test_scoped_reads_refuse_a_statement_without_its_scope(
    one_connection: ScopedReads, rows: tuple[str, str]
) -> None:
    mine, _ = rows
    refused = sample("cairn_scope_guard_refusals_total")
    unbound = text("SELECT m.text FROM memories m WHERE m.tenant_id = :tenant_id")
    with pytest.raises(ScopeGuardError):
        await one_connection.fetch(unbound, {"tenant_id": uuid.UUID(mine)})
    assert sample("cairn_scope_guard_refusals_total") == refused + 1


async def test_a_cancelled_scoped_read_leaves_the_connection_in_scope(
    one_connection: ScopedReads, rows: tuple[str, str]
) -> None:
    mine, _ = rows
    slow = text(
        "SELECT m.text FROM memories m, pg_sleep(5) WHERE m.tenant_id = :tenant_id AND m.subject_id = :subject_id"
    )
    for subject in ("a", "b"):
        call = asyncio.ensure_future(
            one_connection.fetch(slow, {"tenant_id": uuid.UUID(mine), "subject_id": subject})
        )
        await asyncio.sleep(0.3)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        found = await one_connection.fetch(_TEXTS, {"tenant_id": uuid.UUID(mine), "subject_id": "a"})
        assert [r.text for r in found] == [f"a of {mine}"]
