"""The recall-count bump (`cairn_memory.hotness.bump`) against real PostgreSQL, as the service's own role
(row-level security on): it counts in `memory_recalls`, never rewrites the memory's row, honours the
cooldown, counts nothing outside the event's subject, and the sweep's `settled` mark follows the memory."""

import uuid
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from cairn_contracts.recall import MemoryRecalled
from cairn_devstack.cairn import CairnStack
from cairn_memory.hotness import bump
from cairn_storage import create_engine, make_sessionmaker
from conftest import TenantHandle
from tests.integration.test_recall_vector_copy import INSERT


@pytest.fixture
async def sessionmaker(stack: CairnStack) -> AsyncIterator[async_sessionmaker[AsyncSession]]:
    engine = create_engine(stack.service_database_url, pool_size=1)
    try:
        yield make_sessionmaker(engine)
    finally:
        await engine.dispose()


@pytest.fixture
async def admin(stack: CairnStack) -> AsyncIterator[asyncpg.Connection]:
    conn = await asyncpg.connect(stack.database_url)  # the owner: seeds rows and reads past row security
    try:
        yield conn
    finally:
        await conn.close()


async def seed(admin: asyncpg.Connection, tenant_id: str, subject: str, n: int) -> list[uuid.UUID]:
    ids = [uuid.uuid4() for _ in range(n)]
    await admin.executemany(
        INSERT,
        [(m, uuid.UUID(tenant_id), subject, None, f"{subject} {i}", "{}", None) for i, m in enumerate(ids)],
    )
    return ids


def event(tenant_id: str, subject: str, ids: list[uuid.UUID]) -> MemoryRecalled:
    return MemoryRecalled(tenant_id=tenant_id, subject_id=subject, memory_ids=[str(i) for i in ids])


async def counters(admin: asyncpg.Connection, ids: list[uuid.UUID]) -> dict[uuid.UUID, Any]:
    rows = await admin.fetch(
        "SELECT memory_id, recall_count, settled FROM memory_recalls WHERE memory_id = ANY($1::uuid[])", ids
    )
    return {r["memory_id"]: (r["recall_count"], r["settled"]) for r in rows}


async def test_a_bump_counts_beside_the_memory_and_leaves_its_row_alone(
    admin: asyncpg.Connection, sessionmaker: async_sessionmaker[AsyncSession], tenant: TenantHandle
) -> None:
    ids = await seed(admin, tenant.id, "a", 3)
    before = await admin.fetch("SELECT id, ctid, xmin::text FROM memories WHERE id = ANY($1::uuid[])", ids)
    assert await bump(sessionmaker, event(tenant.id, "a", ids[:2]), 3600) == 2
    assert await counters(admin, ids) == {ids[0]: (1, False), ids[1]: (1, False)}
    # No new version of the memory row: the bump wrote nothing into memories' indexes.
    after = await admin.fetch("SELECT id, ctid, xmin::text FROM memories WHERE id = ANY($1::uuid[])", ids)
    assert sorted(map(tuple, after)) == sorted(map(tuple, before))


async def test_the_cooldown_holds_a_second_bump_back(
    admin: asyncpg.Connection, sessionmaker: async_sessionmaker[AsyncSession], tenant: TenantHandle
) -> None:
    ids = await seed(admin, tenant.id, "a", 2)
    assert await bump(sessionmaker, event(tenant.id, "a", ids), 3600) == 2
    assert await bump(sessionmaker, event(tenant.id, "a", ids), 3600) == 0  # inside the cooldown
    assert await counters(admin, ids) == {ids[0]: (1, False), ids[1]: (1, False)}
    assert await bump(sessionmaker, event(tenant.id, "a", ids[:1]), 0) == 1  # past it
    assert await counters(admin, ids) == {ids[0]: (2, False), ids[1]: (1, False)}


async def test_ids_outside_the_events_subject_are_never_counted(
    admin: asyncpg.Connection,
    sessionmaker: async_sessionmaker[AsyncSession],
    tenant: TenantHandle,
    new_tenant: Any,
) -> None:
    other_tenant = await new_tenant()
    mine = await seed(admin, tenant.id, "a", 1)
    neighbour = await seed(admin, tenant.id, "b", 1)
    foreign = await seed(admin, other_tenant.id, "a", 1)
    # An event of subject a that names b's memory and another tenant's: only a's own is counted.
    assert await bump(sessionmaker, event(tenant.id, "a", [*mine, *neighbour, *foreign]), 3600) == 1
    assert await counters(admin, [*mine, *neighbour, *foreign]) == {mine[0]: (1, False)}


async def test_superseded_and_graduated_memories_are_settled_and_rows_go_with_the_memory(
    admin: asyncpg.Connection, sessionmaker: async_sessionmaker[AsyncSession], tenant: TenantHandle
) -> None:
    old, new, graduated = await seed(admin, tenant.id, "a", 3)
    assert await bump(sessionmaker, event(tenant.id, "a", [old, new, graduated]), 3600) == 3
    await admin.execute("UPDATE memories SET superseded_by = $2 WHERE id = $1", old, new)
    await admin.execute(
        "UPDATE memories SET graduated_at = now(), graduated_article_id = $2, graduated_scope = 'global'"
        " WHERE id = $1",
        graduated,
        uuid.uuid4(),
    )
    assert await counters(admin, [old, new, graduated]) == {
        old: (1, True),
        new: (1, False),
        graduated: (1, True),
    }
    await admin.execute("UPDATE memories SET superseded_by = NULL WHERE id = $1", old)  # un-superseded
    assert (await counters(admin, [old]))[old] == (1, False)
    # Deleted as the service deletes (its role, row-level security on): the counters go with the memory.
    async with sessionmaker.begin() as session:
        await session.execute(
            text(
                "DELETE FROM memories WHERE tenant_id = :tenant_id AND subject_id = :subject_id"
                " AND id = ANY(CAST(:ids AS uuid[]))"
            ),
            {"tenant_id": tenant.id, "subject_id": "a", "ids": [str(old), str(new)]},
        )
    assert await counters(admin, [old, new, graduated]) == {graduated: (1, True)}


async def test_a_memory_superseded_before_its_first_bump_starts_settled(
    admin: asyncpg.Connection, sessionmaker: async_sessionmaker[AsyncSession], tenant: TenantHandle
) -> None:
    old, new = await seed(admin, tenant.id, "a", 2)
    await admin.execute("UPDATE memories SET superseded_by = $2 WHERE id = $1", old, new)
    assert (
        await bump(sessionmaker, event(tenant.id, "a", [old]), 3600) == 1
    )  # recalled with include_superseded
    assert await counters(admin, [old]) == {old: (1, True)}
