"""Write and recall latency through the gateway (each request is one or two NATS hops with a scope
token). Run it on two commits back to back to compare scope-signing schemes under the same load.

    python bench/bus_latency.py [--requests 300] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import time

from harness import Bench, running_stack, summary_ms


async def timed(bench: Bench, path: str, key: str, bodies: list[dict[str, object]]) -> list[float]:
    latencies = []
    for body in bodies:
        start = time.perf_counter()
        r = await bench.http.post(path, json=body, headers=bench.auth(key))
        latencies.append(time.perf_counter() - start)
        assert r.status_code in (200, 201), r.text
    return latencies


async def run(requests: int, rounds: int) -> None:
    async with running_stack() as bench:
        await bench.stack.supervisor.stop("memory-embedder")  # no embedding work competing for the CPU
        tenant = await bench.tenant()
        key = await bench.agent_key(tenant, "bench-bus")
        writes_all: list[float] = []
        recalls_all: list[float] = []
        for r in range(rounds + 1):  # round 0 warms up
            writes = await timed(
                bench, "/api/v1/memory", key, [{"text": f"fact {r}-{i} about tea"} for i in range(requests)]
            )
            recalls = await timed(
                bench, "/api/v1/memory/recall", key, [{"query": f"tea {i}"} for i in range(requests)]
            )
            if r:
                writes_all += writes
                recalls_all += recalls
        print(f"POST /api/v1/memory (write), sequential: {summary_ms(writes_all)}")
        print(f"POST /api/v1/memory/recall, sequential: {summary_ms(recalls_all)}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(run(args.requests, args.rounds))
