"""Disk per memory, for sizing (docs/production.md): PostgreSQL bytes per live long-term memory.

Loads `--rows` memories (realistic ~25-word texts, 384-dim unit vectors, a few tags and a small metadata
object) into a private, migrated PostgreSQL with every index the schema has (HNSW maintained row by row,
as in production), then prints bytes per row of the heap + TOAST and of each index, and the total scaled
to 1M memories.

    python bench/storage_per_memory.py [--rows 20000]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import shutil
import tempfile
import time
import uuid
from pathlib import Path

import asyncpg
import numpy as np

from cairn_devstack import BackingStack, StackPorts
from cairn_storage import upgrade

WORDS = (
    "the user prefers dark mode deploys happen on tuesdays invoice number project budget meeting with "
    "team flight to berlin allergic to peanuts database migration ticket customer release notes api key "
    "stored in vault weekly report standup moved to thursday morning coffee order rollout plan"
).split()


def texts(count: int, rng: random.Random) -> list[str]:
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(15, 35))) for _ in range(count)]


def vectors(count: int, rng: np.random.Generator) -> list[str]:
    raw = rng.standard_normal((count, 384)).astype(np.float32)
    raw /= np.linalg.norm(raw, axis=1, keepdims=True)
    return ["[" + ",".join(f"{x:.6f}" for x in row) + "]" for row in raw]


async def measure(database_url: str, rows: int) -> None:
    await upgrade(database_url)
    conn = await asyncpg.connect(database_url)
    try:
        rng, nrng = random.Random(7), np.random.default_rng(7)
        tenant = uuid.uuid4()
        await conn.execute("INSERT INTO tenants (id, name) VALUES ($1, 'size')", tenant)
        began = time.monotonic()
        for start in range(0, rows, 1000):
            n = min(1000, rows - start)
            await conn.executemany(
                "INSERT INTO memories (id, tenant_id, subject_id, text, embedding, embedding_content_hash, "
                "embedding_model, confidence, source, tags, metadata) "
                "VALUES (gen_random_uuid(), $1, $2, $3, CAST($4 AS vector), md5($3) || md5($3), 'local-minilm', 1.0, "
                "'explicit', $5, '{\"app\": \"bench\"}'::jsonb)",
                [
                    (tenant, f"agent-{i % 200}", t, v, ["ui", "prefs"])
                    for i, (t, v) in enumerate(zip(texts(n, rng), vectors(n, nrng), strict=True), start)
                ],
            )
        await conn.execute("VACUUM ANALYZE memories")
        print(f"loaded {rows} memories in {time.monotonic() - began:.0f}s")
        heap = await conn.fetchval("SELECT pg_table_size('memories')")
        indexes = await conn.fetch(
            "SELECT indexrelname AS name, pg_relation_size(indexrelid) AS bytes "
            "FROM pg_stat_user_indexes WHERE relname = 'memories' ORDER BY bytes DESC"
        )
    finally:
        await conn.close()
    total = heap + sum(r["bytes"] for r in indexes)
    print(f"{'heap + TOAST':<40} {heap / rows:8.0f} B/memory")
    for r in indexes:
        print(f"{r['name']:<40} {r['bytes'] / rows:8.0f} B/memory")
    print(
        f"{'total':<40} {total / rows:8.0f} B/memory = {total / rows * 1e6 / 2**30:.1f} GiB per 1M memories"
    )


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=20000)
    args = parser.parse_args()
    data_dir = Path(tempfile.mkdtemp(prefix="cairn-size-"))
    try:
        stack = BackingStack(data_dir, StackPorts.free(), postgres_settings={"fsync": "off"})
        async with stack:
            await measure(stack.database_url, args.rows)
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    asyncio.run(main())
