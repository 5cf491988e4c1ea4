"""Promotion throughput with the offline compiler, through the real stack: sessions promoted per minute
(trigger over HTTP -> Temporal workflow -> compile -> embed + persist -> watermark).

    python bench/promotion_throughput.py [--sessions 100] [--agents 10]
"""

from __future__ import annotations

import argparse
import asyncio
import time

from cairn_promotion.workflows import PromoteSession
from cairn_servicekit.health import connect_temporal
from harness import running_stack

TURNS = [
    ("user", "Morning! Quick one before standup."),
    ("user", "I prefer concise answers with code first."),
    ("user", "Our staging database runs on port {n}."),
    ("assistant", "Got it."),
    ("user", "We decided to use Postgres {n} for the billing service."),
    ("user", "Remember that the on-call rotation changes every {day}."),
]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]


async def run(sessions: int, agents: int) -> None:
    async with running_stack() as bench:
        tenant = await bench.tenant(promotion_budget_per_hour=100_000)
        keys = [await bench.agent_key(tenant, f"agent-{i}") for i in range(agents)]
        for s in range(sessions):
            key = keys[s % agents]
            for role, text in TURNS:
                content = text.format(n=5000 + s, day=DAYS[s % len(DAYS)])
                r = await bench.http.post(
                    "/api/v1/memory",
                    headers=bench.auth(key),
                    json={
                        "tier": "session",
                        "session_id": f"session-{s}",
                        "role": role,
                        "content": content,
                        "ttl_seconds": 3600,
                    },
                )
                r.raise_for_status()
        temporal = await connect_temporal(
            bench.stack.temporal_address,
            bench.stack.temporal_namespace,
            bench.stack.secrets.payload_keys,
        )
        start = time.perf_counter()
        ids = []
        for s in range(sessions):
            r = await bench.http.post(
                "/api/v1/memory/promote",
                headers=bench.auth(keys[s % agents]),
                json={"session_id": f"session-{s}"},
            )
            r.raise_for_status()
            ids.append(r.json()["data"]["workflow_id"])
        triggered = time.perf_counter() - start
        results = await asyncio.gather(
            *(temporal.get_workflow_handle_for(PromoteSession.run, i).result() for i in ids)
        )
        elapsed = time.perf_counter() - start
        promoted = sum(r.promoted + r.superseded for r in results)
        print(
            f"triggered {sessions} promotions in {triggered:.1f} s; all {sessions} workflows completed in "
            f"{elapsed:.1f} s = {sessions / elapsed * 60:.0f} sessions/minute "
            f"({promoted} memories written, {sum(r.deduped for r in results)} deduped)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sessions", type=int, default=100)
    parser.add_argument("--agents", type=int, default=10)
    args = parser.parse_args()
    asyncio.run(run(args.sessions, args.agents))


if __name__ == "__main__":
    main()
