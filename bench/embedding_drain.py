"""The embedding worker's drain of a write burst of conversation turns, and its CPU per memory.

A burst of LongMemEval turns (one agent, concurrency 64) is written through the gateway; then the bench
waits until every memory is embedded and reads the embedding worker's CPU (psutil) over the drain. Pass
service settings to compare, e.g. `--env CAIRN_EMBEDDING_MAX_BATCH_TOKENS=1000000` (no token budget: the
worker's calls are cut by count only, 32 texts each):

    python bench/embedding_drain.py [--burst 3000] [--env NAME=VALUE ...]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time

import aiohttp
import asyncpg
import psutil
from memory_writes import conversations, embedded_rows, load

from harness import embedding_yardstick, running_stack


def embedder_cpu_seconds(root_marker: str) -> float:
    """user + system CPU of the embedding worker(s) run from the checkout at `root_marker`."""
    total = 0.0
    for proc in psutil.process_iter(["cmdline", "cpu_times"]):
        command = " ".join(proc.info["cmdline"] or [])
        if "-m cairn_memory.embedder" in command and root_marker in command:
            times = proc.info["cpu_times"]
            total += times.user + times.system
    return total


async def measure(burst: int, env: dict[str, str]) -> None:
    yardstick = embedding_yardstick()
    texts, _ = conversations(burst)
    async with running_stack(env) as bench:
        tenant = await bench.tenant(memory_quota=burst)
        key = await bench.agent_key(tenant, "drain-writer")
        marker = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # this checkout's venv
        conn = await asyncpg.connect(bench.stack.database_url)
        try:
            async with aiohttp.ClientSession(
                bench.stack.gateway_url, connector=aiohttp.TCPConnector(limit=128)
            ) as http:
                cpu_before = embedder_cpu_seconds(marker)
                start = time.perf_counter()
                written = await load(http, "/api/v1/memory", [key], burst, 64, lambda i: {"text": texts[i]})
                wrote = time.perf_counter() - start
                while await embedded_rows(conn, tenant) < burst:
                    await asyncio.sleep(0.1)
                drained = time.perf_counter() - start
                cpu = embedder_cpu_seconds(marker) - cpu_before
            chunks = await conn.fetchval("SELECT count(*) FROM memory_chunks")
        finally:
            await conn.close()
    print(
        f"{env or 'defaults'}: burst {written} ({wrote:.1f} s); all {burst} embedded {drained:.1f} s after it"
        f" began; embedding worker {1000 * cpu / burst:.1f} cpu-ms per memory ({chunks} extra chunk vectors);"
        f" yardstick {yardstick:.2f} cpu-ms",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--burst", type=int, default=3000)
    parser.add_argument("--env", nargs="*", default=[], help="service settings to try, NAME=VALUE")
    args = parser.parse_args()
    asyncio.run(measure(args.burst, dict(item.split("=", 1) for item in args.env)))


if __name__ == "__main__":
    main()
