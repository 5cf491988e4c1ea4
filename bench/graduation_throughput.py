"""Graduation throughput through the real stack: hot memories graduated per minute by the sweep
(SweepGraduations -> child GraduateMemory per memory -> load -> novelty gate over NATS (embed + checks +
insert) -> stamp), batches and continue-as-new as in production.

Memories are written over HTTP; their recall counts are then set in PostgreSQL (the hotness signal is not
what is measured here). The sweep runs with `max_per_run` = every memory, so one tick takes them all.

    python bench/graduation_throughput.py [--memories 1000] [--tenants 4] [--batch-size 50]
"""

from __future__ import annotations

import argparse
import asyncio
import time
import uuid

import asyncpg

from cairn_contracts.graduation import SweepParams
from cairn_graduation.workflows import SweepGraduations
from cairn_servicekit.health import connect_temporal
from harness import gather_limited, running_stack

WORDS = ["amber", "basalt", "cobalt", "delta", "ember", "fjord", "garnet", "harbor", "indigo", "juniper"]


def fact(i: int) -> str:
    return (
        f"Fact {i}: the {WORDS[i % 10]} team's {WORDS[(i // 10) % 10]} service answers on port {10000 + i} "
        f"and is owned by {WORDS[(i // 100) % 10]} ops"
    )


async def run(memories: int, tenants: int, batch_size: int, batches_per_run: int) -> None:
    async with running_stack() as bench:
        keys = []
        for t in range(tenants):
            tenant = await bench.tenant()
            keys.append(await bench.agent_key(tenant, f"agent-{t}"))

        async def write(i: int) -> None:
            r = await bench.http.post(
                "/api/v1/memory", headers=bench.auth(keys[i % tenants]), json={"text": fact(i)}
            )
            r.raise_for_status()

        await gather_limited(8, [write(i) for i in range(memories)])
        conn = await asyncpg.connect(bench.stack.database_url)
        try:
            await conn.execute(
                "INSERT INTO memory_recalls (memory_id, tenant_id, subject_id, recall_count, last_recalled_at)"
                " SELECT id, tenant_id, subject_id, 3, now() FROM memories"
            )
            temporal = await connect_temporal(
                bench.stack.temporal_address,
                bench.stack.temporal_namespace,
                bench.stack.secrets.payload_keys,
            )
            params = SweepParams(max_per_run=memories, batch_size=batch_size, batches_per_run=batches_per_run)
            sweep_id = f"bench-sweep-{uuid.uuid4().hex[:8]}"
            start = time.perf_counter()
            handle = await temporal.start_workflow(
                SweepGraduations.run, params, id=sweep_id, task_queue=params.task_queue
            )
            result = await handle.result()
            elapsed = time.perf_counter() - start
            stamped = await conn.fetchval("SELECT count(*) FROM memories WHERE graduated_at IS NOT NULL")
            verdicts = await conn.fetch(
                "SELECT status, count(*) AS n FROM articles WHERE source = 'graduated' GROUP BY status"
            )
        finally:
            await conn.close()
        events = []
        async for w in temporal.list_workflows(f"WorkflowId = '{sweep_id}'"):
            history = await temporal.get_workflow_handle(sweep_id, run_id=w.run_id).fetch_history()
            events.append(len(history.events))
        by_status = {r["status"]: r["n"] for r in verdicts}
        print(
            f"sweep graduated {result.graduated} of {memories} hot memories ({tenants} tenants, batch {batch_size}) "
            f"in {elapsed:.1f} s = {memories / elapsed * 60:.0f} memories/minute; stamped {stamped}; "
            f"articles {by_status}; failed {result.failed}; {len(events)} workflow runs, history events per run "
            f"max {max(events)}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--memories", type=int, default=1000)
    parser.add_argument("--tenants", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=50)
    parser.add_argument("--batches-per-run", type=int, default=4)
    args = parser.parse_args()
    asyncio.run(run(args.memories, args.tenants, args.batch_size, args.batches_per_run))


if __name__ == "__main__":
    main()
