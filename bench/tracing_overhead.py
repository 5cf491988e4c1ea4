"""Tracing overhead on write and recall latency: one private stack, the same sequential load in rounds
that alternate OTLP export off and on (off, on, off, on, off), so drift from others' load on a shared
machine hits both sides alike. The receiver (a real OTLP/HTTP one) runs in its own process.

    python bench/tracing_overhead.py [--calls 60] [--rounds 5] [--sampler-ratio 0.1]

"On" restarts the gateway, memory and recall with CAIRN_OTEL_EXPORTER_OTLP_ENDPOINT set (every span
sampled and exported in batches); "off" restarts them without it.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import time
import uuid
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager

from cairn_devstack.cairn import CairnStack
from harness import Bench, running_stack, summary_ms

TRACED = (("memory", "cairn_memory"), ("recall", "cairn_recall"))


async def restart(stack: CairnStack, env: dict[str, str]) -> None:
    for name in ("CAIRN_OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG"):
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


RECEIVER = """
import sys
from cairn_observability.receiver import OtlpReceiver
with OtlpReceiver() as rx:
    print(rx.endpoint, flush=True)
    while sys.stdin.readline():
        print(len(rx.spans()), flush=True)
"""


@contextmanager
def receiver_process() -> Iterator[subprocess.Popen[str]]:
    """The OTLP receiver in its own process, so decoding spans never competes with the timed client."""
    proc = subprocess.Popen(
        [sys.executable, "-c", RECEIVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        yield proc
    finally:
        proc.terminate()
        proc.wait(10)


def spans_received(proc: subprocess.Popen[str]) -> int:
    assert proc.stdin is not None
    assert proc.stdout is not None
    proc.stdin.write("count\n")
    proc.stdin.flush()
    return int(proc.stdout.readline())


async def main(calls: int, rounds: int, ratio: float | None) -> None:
    with receiver_process() as rx:
        assert rx.stdout is not None
        endpoint = rx.stdout.readline().strip()
        async with running_stack() as bench:
            tenant = await bench.tenant()
            results: dict[str, tuple[list[float], list[float]]] = defaultdict(lambda: ([], []))
            for i in range(rounds):
                label = "on" if i % 2 else "off"
                on = {"CAIRN_OTEL_EXPORTER_OTLP_ENDPOINT": endpoint}
                if ratio is not None:  # head sampling at the gateway; services follow the parent's decision
                    on |= {
                        "OTEL_TRACES_SAMPLER": "parentbased_traceidratio",
                        "OTEL_TRACES_SAMPLER_ARG": str(ratio),
                    }
                await restart(bench.stack, on if i % 2 else {})
                key = await bench.agent_key(tenant, f"agent-{i}")  # a fresh subject per round
                writes, recalls = await phase(bench, key, calls)
                results[label][0].extend(writes)
                results[label][1].extend(recalls)
                print(
                    f"  round {i + 1} ({label}): write p50 {statistics.median(writes) * 1000:.1f} ms, "
                    f"recall p50 {statistics.median(recalls) * 1000:.1f} ms"
                )
            sampled = f", sampling ratio {ratio}" if ratio is not None else ", every trace sampled"
            print(
                f"tracing overhead ({rounds} alternating rounds of {calls} sequential writes and recalls{sampled})"
            )
            for label in ("off", "on"):
                writes, recalls = results[label]
                print(f"  {label:3}  write {summary_ms(writes)}   recall {summary_ms(recalls)}")
            off_w, off_r = statistics.median(results["off"][0]), statistics.median(results["off"][1])
            on_w, on_r = statistics.median(results["on"][0]), statistics.median(results["on"][1])
            print(
                f"  median overhead: write {(on_w - off_w) * 1000:+.2f} ms ({(on_w / off_w - 1) * 100:+.1f}%), "
                f"recall {(on_r - off_r) * 1000:+.2f} ms ({(on_r / off_r - 1) * 100:+.1f}%)"
            )
            print(f"  spans exported while on: {spans_received(rx)}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=60)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--sampler-ratio", type=float, default=None, help="e.g. 0.1: keep 10%% of traces")
    args = parser.parse_args()
    asyncio.run(main(args.calls, args.rounds, args.sampler_ratio))
