"""The trigger-kept counts (migration 0013) against real PostgreSQL: every writer is counted, whatever
path it takes, and the one-statement writes stop exactly at their caps, also when they race."""

import asyncio
import uuid
from datetime import UTC, datetime, timedelta

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from cairn_devstack.cairn import CairnStack
from cairn_memory.store import append_under_caps, insert_under_quota
from cairn_storage import create_engine
from cairn_storage.models import Memory, SessionMemory


def memory(tenant: uuid.UUID, subject: str) -> Memory:
    return Memory(
        id=uuid.uuid4(),
        tenant_id=tenant,
        subject_id=subject,
        project_id=None,
        text="a fact",
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


async def counted_vs_live(conn: AsyncConnection, tenant: uuid.UUID) -> tuple[dict[str, int], dict[str, int]]:
    counted = await conn.execute(
        text("SELECT subject_id, live FROM memory_live_counts WHERE tenant_id = :t"), {"t": tenant}
    )
    live = await conn.execute(
        text(
            "SELECT subject_id, count(*) FROM memories WHERE tenant_id = :t AND superseded_by IS NULL "
            "GROUP BY subject_id"
        ),
        {"t": tenant},
    )
    return {r[0]: r[1] for r in counted if r[1]}, {r[0]: r[1] for r in live}


async def autocommit(stack: CairnStack) -> AsyncEngine:
    # Seeds and inspects as the superuser across subjects: an explicit maintenance path for the scope hook.
    return create_engine(stack.database_url, pool_size=12, isolation_level="AUTOCOMMIT").execution_options(
        cairn_maintenance="test_seed"
    )


async def test_every_writer_is_counted(stack: CairnStack) -> None:
    tenant = uuid.uuid4()
    engine = await autocommit(stack)
    try:
        async with engine.connect() as conn:
            # A multi-row insert (one statement, two subjects), as promotion or a bulk load writes.
            await conn.execute(
                text("INSERT INTO memories (id, tenant_id, subject_id, text) VALUES (:id, :t, :s, 'x')"),
                [{"id": uuid.uuid4(), "t": tenant, "s": s} for s in ("a", "a", "a", "b", "b")],
            )
            assert await insert_under_quota(conn, memory(tenant, "a"), 100) is not None
            ids = (
                await conn.execute(
                    text("SELECT id FROM memories WHERE tenant_id = :t AND subject_id = 'a' ORDER BY id"),
                    {"t": tenant},
                )
            ).scalars()
            first, second, *_ = list(ids)
            # Supersede (live -> superseded), un-supersede, delete a live row, delete a superseded row.
            await conn.execute(
                text("UPDATE memories SET superseded_by = :n WHERE id = :id"), {"n": second, "id": first}
            )
            await conn.execute(
                text("UPDATE memories SET confidence = 0.5 WHERE tenant_id = :t"),
                {"t": tenant},
            )
            await conn.execute(text("DELETE FROM memories WHERE id = :id"), {"id": second})
            await conn.execute(text("DELETE FROM memories WHERE id = :id"), {"id": first})
            counted, live = await counted_vs_live(conn, tenant)
            assert counted == live == {"a": 2, "b": 2}
    finally:
        await engine.dispose()


async def test_racing_writers_stop_exactly_at_the_quota(stack: CairnStack) -> None:
    tenant = uuid.uuid4()
    engine = await autocommit(stack)
    try:

        async def write() -> bool:
            async with engine.connect() as conn:
                return await insert_under_quota(conn, memory(tenant, "racer"), 7) is not None

        outcomes = await asyncio.gather(*(write() for _ in range(30)))
        assert sorted(outcomes) == [False] * 23 + [True] * 7
        async with engine.connect() as conn:
            counted, live = await counted_vs_live(conn, tenant)
        assert counted == live == {"racer": 7}
    finally:
        await engine.dispose()


async def test_session_counts_are_an_upper_bound_until_the_prune(stack: CairnStack) -> None:
    tenant = uuid.uuid4()
    engine = await autocommit(stack)
    try:
        async with engine.connect() as conn:
            results = [await append_under_caps(conn, turn(tenant, "s1"), 3, 1000) for _ in range(4)]
            assert [r is not None for r in results] == [True, True, True, False]  # the 4th is past 3
            assert [r[0] for r in results[:3] if r] == sorted(r[0] for r in results[:3] if r)
            # Bytes: 995 + 5 fits a 1000-byte cap exactly; one more byte does not.
            assert await append_under_caps(conn, turn(tenant, "s2", "x" * 995), 10, 1000) is not None
            assert await append_under_caps(conn, turn(tenant, "s2", "12345"), 10, 1000) is not None
            assert await append_under_caps(conn, turn(tenant, "s2", "y"), 10, 1000) is None
            # Expired turns still count until the prune deletes them (the exact check then decides).
            await conn.execute(
                text(
                    "UPDATE session_memories SET expires_at = now() - interval '1 second' WHERE tenant_id = :t"
                ),
                {"t": tenant},
            )
            assert await append_under_caps(conn, turn(tenant, "s1"), 3, 1000) is None
            await conn.execute(text("DELETE FROM session_memories WHERE tenant_id = :t"), {"t": tenant})
            counts = await conn.execute(
                text("SELECT turns, bytes FROM session_turn_counts WHERE tenant_id = :t"), {"t": tenant}
            )
            assert {tuple(r) for r in counts} == {(0, 0)}
            assert await append_under_caps(conn, turn(tenant, "s1"), 3, 1000) is not None
    finally:
        await engine.dispose()
