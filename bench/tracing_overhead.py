"""Tracing overhead on write and recall latency: one private stack, the same sequential load with OTLP
export off, on (to a real receiver in this process), and off again (the second "off" shows drift from
others' load on a shared machine).

    python bench/tracing_overhead.py [--calls 200]

"On" restarts the gateway, memory and recall with CAIRN_OTEL_EXPORTER_OTLP_ENDPOINT set (every span
sampled and exported in batches); "off" restarts them without it.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
import uuid

from cairn_devstack.cairn import CairnStack
from cairn_observability.receiver import OtlpReceiver
from harness import Bench, running_stack, summary_ms

TRACED = (("memory", "cairn_memory"), ("recall", "cairn_recall"))


async def restart(stack: CairnStack, env: dict[str, str]) -> None:
    for name in ("CAIRN_OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_BSP_SCHEDULE_DELAY"):
        stack.config.service_env.pop(name, None)
    stack.config.service_env.update(env)
    for name, _ in TRACED:
        await stack.supervisor.stop(name)
    await stack.supervisor.stop("gateway")
    for name, module in TRACED:
        await stack.start_service(name, module)
    await stack.start_gateway()
    await stack.wait_ready()


async def phase(bench: Bench, key: str, calls: int) -> tuple[list[float], list[float]]:
    headers = bench.auth(key)
    for _ in range(10):  # warm up connections, caches and the model
        await bench.http.post("/api/v1/memory/recall", json={"query": "warm up"}, headers=headers)
    writes, recalls = [], []
    for i in range(calls):
        start = time.perf_counter()
        r = await bench.http.post(
            "/api/v1/memory", json={"text": f"fact {i} {uuid.uuid4().hex}"}, headers=headers
        )
        writes.append(time.perf_counter() - start)
        assert r.status_code == 201, r.text
        start = time.perf_counter()
        r = await bench.http.post("/api/v1/memory/recall", json={"query": f"fact {i % 20}"}, headers=headers)
        recalls.append(time.perf_counter() - start)
        assert r.status_code == 200, r.text
    return writes, recalls


async def main(calls: int) -> None:
    with OtlpReceiver() as receiver:
        async with running_stack() as bench:
            tenant = await bench.tenant()
            results: dict[str, tuple[list[float], list[float]]] = {}
            for label, env in (
                ("off", {}),
                ("on", {"CAIRN_OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint}),
                ("off again", {}),
            ):
                await restart(bench.stack, env)
                key = await bench.agent_key(
                    tenant, f"agent-{label.replace(' ', '-')}"
                )  # a fresh subject each
                results[label] = await phase(bench, key, calls)
            print(f"tracing overhead ({calls} sequential writes and recalls per phase, one private stack)")
            for label, (writes, recalls) in results.items():
                print(f"  {label:9}  write {summary_ms(writes)}   recall {summary_ms(recalls)}")
            base_w = statistics.median(results["off"][0] + results["off again"][0])
            base_r = statistics.median(results["off"][1] + results["off again"][1])
            on_w, on_r = statistics.median(results["on"][0]), statistics.median(results["on"][1])
            print(
                f"  median overhead: write {(on_w - base_w) * 1000:+.2f} ms ({(on_w / base_w - 1) * 100:+.1f}%), "
                f"recall {(on_r - base_r) * 1000:+.2f} ms ({(on_r / base_r - 1) * 100:+.1f}%)"
            )
            print(f"  spans received while on: {len(receiver.spans())} in {receiver.requests} OTLP requests")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200)
    asyncio.run(main(parser.parse_args().calls))
