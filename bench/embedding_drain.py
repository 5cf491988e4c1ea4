"""The embedding worker's drain of a write burst of conversation turns, and its CPU per memory.

A burst of LongMemEval turns (one agent, concurrency 64) is written through the gateway; then the bench
waits until every memory is embedded (`memory_writes.burst_and_drain`) and reads the embedding worker's
CPU over the whole run (`write_cpu.cpu_by_process`). Pass service settings to compare, e.g.
`--env CAIRN_EMBEDDING_MAX_BATCH_TOKENS=1000000` (no token budget: the worker's calls are cut by count
only, 32 texts each):

    python bench/embedding_drain.py [--burst 3000] [--env NAME=VALUE ...]
"""

from __future__ import annotations

import argparse
import asyncio
import os

import aiohttp
from memory_writes import Report, burst_and_drain, conversations
from write_cpu import cpu_by_process

from harness import embedding_yardstick, running_stack

EMBEDDER = "cairn_memory.embedder"


async def measure(burst: int, env: dict[str, str]) -> None:
    yardstick = embedding_yardstick()
    texts, _ = conversations(burst)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    async with running_stack(env) as bench:
        tenant = await bench.tenant(memory_quota=burst)
        key = await bench.agent_key(tenant, "drain-writer")
        rows = Report()
        rows["settings"] = str(env or "defaults")
        rows["machine: a 20-token query's embedding, one thread"] = f"{yardstick:.2f} cpu-ms"
        async with aiohttp.ClientSession(
            bench.stack.gateway_url, connector=aiohttp.TCPConnector(limit=128)
        ) as http:
            before = cpu_by_process(str(bench.stack.data_dir), root).get(EMBEDDER, 0.0)
            await burst_and_drain(bench, http, tenant, key, texts, rows)
            cpu = cpu_by_process(str(bench.stack.data_dir), root).get(EMBEDDER, 0.0) - before
        rows["embedding worker"] = f"{1000 * cpu / burst:.1f} cpu-ms per memory"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--burst", type=int, default=3000)
    parser.add_argument("--env", nargs="*", default=[], help="service settings to try, NAME=VALUE")
    args = parser.parse_args()
    asyncio.run(measure(args.burst, dict(item.split("=", 1) for item in args.env)))


if __name__ == "__main__":
    main()
