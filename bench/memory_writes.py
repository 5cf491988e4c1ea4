"""Memory benchmarks through the real stack: gateway auth overhead, long-term writes/second, and the
embedding worker's throughput (rows/second) with the local model.

    python bench/memory_writes.py [--writes 2000] [--concurrency 16]
"""

from __future__ import annotations

import argparse
import asyncio
import time
import uuid

import asyncpg

from harness import Bench, running_stack, summary_ms


async def timed_requests(bench: Bench, path: str, key: str | None, count: int) -> list[float]:
    headers = bench.auth(key) if key else {}
    latencies = []
    for _ in range(count):
        start = time.perf_counter()
        r = await bench.http.get(path, headers=headers)
        latencies.append(time.perf_counter() - start)
        assert r.status_code == 200, r.text
    return latencies


async def run(writes: int, concurrency: int) -> None:
    async with running_stack() as bench:
        tenant = await bench.tenant()
        key = await bench.agent_key(tenant, "bench-writer")

        await timed_requests(bench, "/api/v1/whoami", key, 100)  # warm up
        health = await timed_requests(bench, "/healthz", None, 1000)
        whoami = await timed_requests(bench, "/api/v1/whoami", key, 1000)
        print(f"GET /healthz (no auth), sequential: {summary_ms(health)}")
        print(f"GET /api/v1/whoami (auth + scope), sequential: {summary_ms(whoami)}")
        overhead = (sorted(whoami)[len(whoami) // 2] - sorted(health)[len(health) // 2]) * 1000
        print(
            f"median auth overhead per request: {overhead:.2f} ms; whoami {len(whoami) / sum(whoami):.0f} req/s"
        )

        writers = [key] + [await bench.agent_key(tenant, f"bench-writer-{i}") for i in range(1, concurrency)]
        await bench.stack.supervisor.stop("memory-embedder")
        for label, keys in (("one agent", [key]), (f"{concurrency} agents", writers)):
            sem = asyncio.Semaphore(concurrency)
            latencies: list[float] = []

            async def write(
                i: int,
                keys: list[str] = keys,
                latencies: list[float] = latencies,
                sem: asyncio.Semaphore = sem,
            ) -> None:
                async with sem:
                    start = time.perf_counter()
                    r = await bench.http.post(
                        "/api/v1/memory",
                        headers=bench.auth(keys[i % len(keys)]),
                        json={"text": f"benchmark fact {i}: the user's code word is {uuid.uuid4().hex[:8]}"},
                    )
                    latencies.append(time.perf_counter() - start)
                    assert r.status_code == 201, r.text

            start = time.perf_counter()
            await asyncio.gather(*(write(i) for i in range(writes)))
            elapsed = time.perf_counter() - start
            print(
                f"long-term writes through the gateway, {label}: {writes / elapsed:.0f} writes/s "
                f"({writes} writes, concurrency {concurrency}); latency {summary_ms(latencies)}"
            )
        writes *= 2  # both rounds wait for the embedder below

        conn = await asyncpg.connect(bench.stack.database_url)
        try:
            await bench.stack.start_service("memory-embedder", "cairn_memory.embedder")
            start = time.perf_counter()
            while True:
                ready = await conn.fetchval(
                    "SELECT count(embedding_content_hash) FROM memories WHERE tenant_id = $1",
                    uuid.UUID(tenant),
                )
                if ready >= writes:
                    break
                await asyncio.sleep(0.05)
            elapsed = time.perf_counter() - start
            print(
                f"embedding worker backlog: {writes} rows in {elapsed:.1f} s = {writes / elapsed:.0f} rows/s "
                "(from worker start: includes model load and JetStream fetches)"
            )
        finally:
            await conn.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--writes", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()
    asyncio.run(run(args.writes, args.concurrency))


if __name__ == "__main__":
    main()
