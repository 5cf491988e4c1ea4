"""What the scope backstop costs a write: the memory service's write transaction (advisory lock, quota
count, insert) with the engine hook and row-level security, against the same transaction with neither.

    python bench/scope_overhead.py [--writes 500] [--rounds 4]

"with" runs as the services' RLS-bound login through the hook (statement walk + one set_config round
trip per transaction + the policy); "without" removes the hook from its engine and connects as the
superuser (RLS skipped). Rounds alternate so load on the machine hits both sides alike.
"""

from __future__ import annotations

import argparse
import asyncio
import time
import timeit
import uuid
from collections.abc import Mapping
from typing import Any

from sqlalchemy import event, func, insert, select, text
from sqlalchemy.ext.asyncio import AsyncEngine

from cairn_scope.walker import walk
from cairn_storage import create_engine, make_sessionmaker
from cairn_storage.models import Memory
from cairn_storage.scope_hook import _before_execute
from harness import running_stack, summary_ms


async def writes(engine: AsyncEngine, tenant: uuid.UUID, subject: str, count: int) -> list[float]:
    sm = make_sessionmaker(engine)
    latencies = []
    for i in range(count):
        start = time.perf_counter()
        async with sm.begin() as session:
            await session.execute(
                text("SELECT pg_advisory_xact_lock(hashtextextended(:k, 0))"), {"k": subject}
            )
            await session.scalar(
                select(func.count()).where(Memory.tenant_id == tenant, Memory.subject_id == subject)
            )
            await session.execute(
                insert(Memory).values(tenant_id=tenant, subject_id=subject, text=f"bench {i}")
            )
        latencies.append(time.perf_counter() - start)
    return latencies


def walk_cost() -> None:
    tenant, subject = uuid.uuid4(), "bench"
    statements = {
        "quota count": select(func.count()).where(Memory.tenant_id == tenant, Memory.subject_id == subject),
        "insert": insert(Memory).values(tenant_id=tenant, subject_id=subject, text="x"),
        "orm insert (params)": insert(Memory),
    }
    params: list[Mapping[str, Any]] = [{"tenant_id": tenant, "subject_id": subject}]
    for name, stmt in statements.items():
        n = 2000

        def once(stmt: Any = stmt) -> None:
            walk(stmt, params)

        us = timeit.timeit(once, number=n) / n * 1e6
        print(f"walker, {name}: {us:.0f} us per statement")


async def run(count: int, rounds: int) -> None:
    walk_cost()
    async with running_stack() as bench:
        with_rls = create_engine(bench.stack.service_database_url, pool_size=1)
        without = create_engine(bench.stack.database_url, pool_size=1)
        event.remove(without.sync_engine, "before_execute", _before_execute)
        tenant = uuid.UUID(await bench.tenant())
        results: dict[str, list[float]] = {"with": [], "without": []}
        try:
            for r in range(rounds):
                for name, engine in (("with", with_rls), ("without", without)):
                    results[name] += await writes(engine, tenant, f"bench-{name}-{r}", count)
        finally:
            await with_rls.dispose()
            await without.dispose()
        for name, values in results.items():
            print(f"write transaction {name} hook + RLS: {summary_ms(values)}")
        med = {k: sorted(v)[len(v) // 2] for k, v in results.items()}
        print(
            f"median cost of the backstop per write transaction: {(med['with'] - med['without']) * 1000:.2f} ms"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--writes", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    asyncio.run(run(args.writes, args.rounds))


if __name__ == "__main__":
    main()
