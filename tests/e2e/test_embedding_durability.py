"""The embedding worker is durable: a stopped or killed worker loses nothing and never writes a second,
different vector for a row."""

import asyncio
import os
import signal
import uuid

import asyncpg
import httpx
import numpy as np

from cairn_devstack.cairn import CairnStack
from cairn_embeddings import EmbeddingSettings, LocalOnnxEmbedder, content_hash
from conftest import TenantHandle
from tests.e2e.test_memory import remember


async def _counts(conn: asyncpg.Connection, tenant_id: str) -> tuple[int, int]:
    row = await conn.fetchrow(
        "SELECT count(*) AS total, count(embedding_content_hash) AS ready FROM memories WHERE tenant_id = $1",
        uuid.UUID(tenant_id),
    )
    assert row is not None
    return int(row["total"]), int(row["ready"])


async def _wait_ready(conn: asyncpg.Connection, tenant_id: str, expected: int, timeout: float = 90) -> None:
    for _ in range(int(timeout / 0.25)):
        total, ready = await _counts(conn, tenant_id)
        if ready == expected:
            assert total == expected
            return
        await asyncio.sleep(0.25)
    raise AssertionError(f"{ready} of {expected} embedded")


async def _write(http: httpx.AsyncClient, key: str, start: int, count: int) -> None:
    sem = asyncio.Semaphore(20)

    async def one(i: int) -> None:
        async with sem:
            await remember(
                http, key, text=f"durable fact number {i}: the user's locker code is {i * 7919 % 10000}"
            )

    await asyncio.gather(*(one(i) for i in range(start, start + count)))


async def test_stopped_then_killed_worker_loses_nothing(
    http: httpx.AsyncClient, tenant: TenantHandle, stack: CairnStack
) -> None:
    key = await tenant.agent()
    conn = await asyncpg.connect(stack.database_url)
    # Audit every write of a vector: each row must be embedded exactly once, whatever is redelivered.
    await conn.execute(f"""
        CREATE TABLE embed_audit_{tenant.id.replace("-", "")} (id uuid);
        CREATE FUNCTION embed_audit_fn() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN INSERT INTO embed_audit_{tenant.id.replace("-", "")} VALUES (NEW.id); RETURN NEW; END $$;
        CREATE TRIGGER embed_audit AFTER UPDATE OF embedding ON memories
        FOR EACH ROW WHEN (NEW.tenant_id = '{tenant.id}') EXECUTE FUNCTION embed_audit_fn();
    """)
    try:
        await stack.supervisor.stop("memory-embedder")
        await _write(http, key, 0, 200)
        assert await _counts(conn, tenant.id) == (200, 0)
        await stack.start_service("memory-embedder", "cairn_memory.embedder")
        await _wait_ready(conn, tenant.id, 200)

        await stack.supervisor.stop("memory-embedder")
        await _write(http, key, 200, 400)
        await stack.start_service("memory-embedder", "cairn_memory.embedder")
        while (await _counts(conn, tenant.id))[1] == 200:  # kill it once it is mid-way through the backlog
            await asyncio.sleep(0.02)
        os.kill(stack.supervisor.pids()["memory-embedder"], signal.SIGKILL)
        await asyncio.sleep(0.5)
        partial = (await _counts(conn, tenant.id))[1]
        assert 200 < partial < 600, partial
        await stack.supervisor.stop("memory-embedder")  # reap it
        await stack.start_service("memory-embedder", "cairn_memory.embedder")
        await _wait_ready(conn, tenant.id, 600)

        writes = await conn.fetch(
            f"SELECT id, count(*) AS n FROM embed_audit_{tenant.id.replace('-', '')} GROUP BY id"
        )
        assert len(writes) == 600
        assert {w["n"] for w in writes} == {1}  # redelivery after the kill rewrote nothing
        rows = await conn.fetch(
            "SELECT text, embedding::text AS vector, embedding_content_hash FROM memories WHERE tenant_id = $1",
            uuid.UUID(tenant.id),
        )
        assert all(r["embedding_content_hash"] == content_hash(r["text"]) for r in rows)
        embedder = LocalOnnxEmbedder.load(cache_dir=EmbeddingSettings().model_cache_dir)
        sample = rows[::20]
        fresh = np.array(embedder.embed_sync([r["text"] for r in sample]))
        stored = np.array([[float(x) for x in r["vector"].strip("[]").split(",")] for r in sample])
        # int8 activations are quantised per batch, so batch-mates nudge a vector; it stays the same text's.
        assert np.min(np.sum(stored * fresh, axis=1)) > 0.97
    finally:
        await conn.execute(f"""
            DROP TRIGGER IF EXISTS embed_audit ON memories;
            DROP FUNCTION IF EXISTS embed_audit_fn();
            DROP TABLE IF EXISTS embed_audit_{tenant.id.replace("-", "")};
        """)
        await conn.close()
        if not stack.supervisor.is_running("memory-embedder"):
            await stack.start_service("memory-embedder", "cairn_memory.embedder")
