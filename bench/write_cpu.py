"""CPU time per request, per process, on the write path: the whole stack on this machine.

With two cores, throughput is the CPU that each write costs, summed over every process that touches it.
That figure holds up under background load; requests per second do not. The bench reads `utime + stime` of
every process of its private stack (gateway, services, embedding worker, PostgreSQL backends, nats-server,
Temporal) and of itself (the load client) before and after a fixed load from 64 agents at concurrency 64,
and divides the difference by the number of requests.

    python bench/write_cpu.py [--kind memory|turn|both] [--requests 4000] [--env CAIRN_X=1 ...]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time

import aiohttp
import psutil
from memory_writes import AGENTS, Body, fact, load, turn
from prometheus_client.parser import text_string_to_metric_families

from harness import embedding_yardstick, running_stack


def cpu_by_process(data_dir: str, root: str) -> dict[str, float]:
    """CPU seconds so far of each component of the stack under `data_dir`, and of this process."""
    seconds: dict[str, float] = {}
    me = os.getpid()
    for proc in psutil.process_iter(["pid", "name", "cmdline", "cpu_times"]):
        info = proc.info
        command = " ".join(info["cmdline"] or [])
        if info["pid"] == me:
            name = "load client"
        elif info["name"] == "postgres" and (data_dir in command or _parent_in(proc, data_dir)):
            name = "postgres"
        elif "-m cairn_" in command and root in command:
            name = command.split("-m ", 1)[1].split()[0]
        elif "nats-server" in command and data_dir in command:
            name = "nats-server"
        elif "temporal" in command and data_dir in command:
            name = "temporal"
        else:
            continue
        times = info["cpu_times"]
        seconds[name] = seconds.get(name, 0.0) + times.user + times.system
    return seconds


async def batch_counts(http: aiohttp.ClientSession, url: str) -> dict[str, tuple[float, float]]:
    """(batches, writes) the memory service committed so far, per kind (`cairn_write_batch_size`)."""
    async with http.get(f"{url}/metrics") as r:
        text = await r.text()
    counts: dict[str, tuple[float, float]] = {}
    for family in text_string_to_metric_families(text):
        if family.name != "cairn_write_batch_size":
            continue
        for sample in family.samples:
            kind = sample.labels.get("kind", "")
            batches, writes = counts.get(kind, (0.0, 0.0))
            if sample.name.endswith("_count"):
                batches = sample.value
            elif sample.name.endswith("_sum"):
                writes = sample.value
            counts[kind] = (batches, writes)
    return counts


def _parent_in(proc: psutil.Process, data_dir: str) -> bool:
    """PostgreSQL backends are named `postgres: ...`; their postmaster's command line names the data dir."""
    try:
        parent = proc.parent()
        return parent is not None and data_dir in " ".join(parent.cmdline())
    except psutil.Error:
        return False


async def measure(kind: str, body: Body, requests: int, env: dict[str, str]) -> None:
    yardstick = embedding_yardstick()
    async with running_stack(env) as bench:
        tenant = await bench.tenant(memory_quota=1_000_000)
        agents = [await bench.agent_key(tenant, f"agent-{i}") for i in range(AGENTS)]
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        async with aiohttp.ClientSession(
            bench.stack.gateway_url, connector=aiohttp.TCPConnector(limit=128)
        ) as http:
            await load(http, "/api/v1/memory", agents, 1000, 64, fact)  # warm every cache and pool
            await asyncio.sleep(2)
            memory_url = bench.stack.http_url("memory")
            batches_before = await batch_counts(http, memory_url)
            before = cpu_by_process(str(bench.stack.data_dir), root)
            start = time.perf_counter()
            result = await load(http, "/api/v1/memory", agents, requests, 64, body)
            wall = time.perf_counter() - start
            after = cpu_by_process(str(bench.stack.data_dir), root)
            batches_after = await batch_counts(http, memory_url)
        print(f"{kind}: {result}; load average {os.getloadavg()[0]:.1f}; yardstick {yardstick:.2f} cpu-ms")
        for label, (batches, writes) in sorted(batches_after.items()):
            b0, w0 = batches_before.get(label, (0.0, 0.0))
            if batches > b0:
                print(
                    f"  {label} batches: {batches - b0:.0f}, {(writes - w0) / (batches - b0):.1f} writes each"
                )
        spent = {name: after[name] - before.get(name, 0.0) for name in after}
        for name, cpu in sorted(spent.items(), key=lambda item: -item[1]):
            if cpu > 0.001 * wall:
                print(
                    f"  {name:<24} {1000 * cpu / requests:6.2f} cpu-ms/request ({100 * cpu / wall:5.1f}% of a core)"
                )
        print(f"  {'total':<24} {1000 * sum(spent.values()) / requests:6.2f} cpu-ms/request")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--kind", choices=("memory", "turn", "both"), default="both")
    parser.add_argument("--requests", type=int, default=4000)
    parser.add_argument("--env", nargs="*", default=[], help="service settings to try, NAME=VALUE")
    args = parser.parse_args()
    env = dict(item.split("=", 1) for item in args.env)
    kinds = {"memory": fact, "turn": turn}
    for kind, body in kinds.items():
        if args.kind in (kind, "both"):
            asyncio.run(measure(kind, body, args.requests, env))


if __name__ == "__main__":
    main()
