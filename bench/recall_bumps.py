"""What counting a recall costs: `cairn_memory.hotness.bump` on one agent's 10,000 embedded turns.

Every recall announces the memories it returned above the floor, and the memory service counts them (at most
once per cooldown each). This bench sends that count's events straight to `hotness.bump`, through the
service's own role (row-level security on), ten memories an event as a recall's top ten:

- "first recall": memories never counted before (the row is created);
- "again, past the cooldown": the same memories once more, with a cooldown of 0 (the row is updated);
- "inside the cooldown": the same again with the real cooldown (nothing is written).

It prints the p50 and p95 of an event, one at a time (the consumer's own pace), with its commit. Since
migration 0020 the count lives in `memory_recalls`; before it, the same events rewrote the memory row and so
inserted it again into both vector graphs and the full-text index (docs/performance.md, twentieth round).

    python bench/recall_bumps.py [--keep /tmp/cairn-recall-bench] [--events 100]
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path

import aiohttp
import asyncpg
from memory_writes import Report, conversations
from recall_throughput import SUBJECT_INDEX_MIN_ROWS, burst_subject

from cairn_contracts.recall import MemoryRecalled
from cairn_memory.hotness import bump
from cairn_memory.settings import MemorySettings
from cairn_storage import create_engine, make_sessionmaker
from harness import running_stack, summary_ms, wait_subject_indexes

BURST = 10_000
PER_EVENT = 10
COOLDOWN = MemorySettings.model_fields["hot_cooldown_seconds"].default


async def timed(calls: list[Callable[[], Awaitable[int]]], expect: int) -> list[float]:
    took = []
    for call in calls:
        start = time.perf_counter()
        counted = await call()
        took.append(time.perf_counter() - start)
        if counted != expect:
            raise RuntimeError(f"an event counted {counted} memories, expected {expect}")
    return took


async def run(keep: Path | None, events: int) -> None:
    async with running_stack(keep_dir=keep) as bench:
        async with aiohttp.ClientSession(bench.stack.gateway_url) as http:
            key = await burst_subject(bench, http, keep, BURST, 0)
            _, questions = conversations(1)
            # The subject's own HNSW and GIN indexes exist once it is past the threshold: every index a
            # rewrite of its rows would have to insert into.
            if BURST > SUBJECT_INDEX_MIN_ROWS:
                await wait_subject_indexes(bench, key, questions[0])
        conn = await asyncpg.connect(bench.stack.database_url)
        try:
            tenant_id, subject_id = await conn.fetchrow(
                "SELECT tenant_id, subject_id FROM memories WHERE subject_id = 'bench-burst' LIMIT 1"
            )
            ids = [
                str(r[0])
                for r in await conn.fetch(
                    "SELECT m.id FROM memories m WHERE m.tenant_id = $1 AND m.subject_id = $2"
                    " AND m.superseded_by IS NULL"
                    " AND NOT EXISTS (SELECT 1 FROM memory_recalls r WHERE r.memory_id = m.id)"
                    " ORDER BY random() LIMIT $3",
                    tenant_id,
                    subject_id,
                    events * PER_EVENT,
                )
            ]
        finally:
            await conn.close()
        if len(ids) < events * PER_EVENT:
            raise SystemExit(f"only {len(ids)} memories never counted are left; run on a fresh stack")
        batches = [
            MemoryRecalled(tenant_id=str(tenant_id), subject_id=subject_id, memory_ids=ids[i : i + PER_EVENT])
            for i in range(0, len(ids), PER_EVENT)
        ]
        engine = create_engine(bench.stack.service_database_url, pool_size=1)
        try:
            sm = make_sessionmaker(engine)
            rows = Report()
            rows["subject"] = f"{BURST:,} embedded turns, {PER_EVENT} memories an event, {events} events"
            first = await timed([partial(bump, sm, e, COOLDOWN) for e in batches], PER_EVENT)
            again = await timed([partial(bump, sm, e, 0) for e in batches], PER_EVENT)
            held = await timed([partial(bump, sm, e, COOLDOWN) for e in batches], 0)
            rows["first recall"] = summary_ms(first)
            rows["again, past the cooldown"] = summary_ms(again)
            rows["inside the cooldown"] = summary_ms(held)
        finally:
            await engine.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--keep", type=Path, help="keep (and reuse) the stack's data in this directory")
    parser.add_argument("--events", type=int, default=100)
    args = parser.parse_args()
    asyncio.run(run(args.keep, args.events))


if __name__ == "__main__":
    main()
