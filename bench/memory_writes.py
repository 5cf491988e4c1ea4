"""Write-path and read-path throughput through the real stack, the whole stack on this machine.

One run reports:
- gateway auth overhead (GET /healthz vs GET /api/v1/whoami, sequential);
- long-term writes/s with p50/p95 at concurrency 16 and 64, for one agent and for 64 agents;
- session appends/s (64 agents, each appending to its own session) at concurrency 16 and 64;
- a burst of 10,000 writes by one agent, and the time until the embedding worker has embedded all of it;
- recalls/s with p50/p95 at concurrency 16 over that agent's 10,000 memories.

The burst writes real conversation turns (LongMemEval-S haystack turns, public data nobody here wrote, as
`bench/longmemeval.py` stores them), and recall asks that dataset's questions, each made unique with a
number so that every query is embedded (no query-embedding cache hits). The other rounds write short
templated facts.

The embedding worker runs throughout, as in production: writes compete with it for the same two cores.
The load comes from aiohttp in this process (lighter per request than httpx, so the client takes less of
the CPU it is measuring).

    python bench/memory_writes.py [--writes 3000] [--burst 10000] [--recalls 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import gzip
import json
import time
import uuid
from collections.abc import Callable
from typing import Any

import aiohttp
import asyncpg
from longmemeval import DATA, turns_of

from harness import (
    Bench,
    embedding_yardstick,
    running_stack,
    summary_ms,
    wait_keyword_copy,
    wait_subject_copy,
    wait_subject_indexes,
)

AGENTS = 64
Body = Callable[[int], dict[str, Any]]


class Report(dict[str, str]):
    """Each figure is printed as soon as it is measured (a long run that fails late keeps what it had)."""

    def __setitem__(self, label: str, value: str) -> None:
        super().__setitem__(label, value)
        print(f"{label:<50}  {value}", flush=True)


def fact(i: int) -> dict[str, Any]:
    return {"text": f"benchmark fact {i}: the user's code word is {uuid.uuid4().hex[:8]}"}


def turn(i: int) -> dict[str, Any]:
    return {"tier": "session", "session_id": f"s-{i % AGENTS}", "role": "user", "content": f"turn {i}"}


def conversations(count: int) -> tuple[list[str], list[str]]:
    """`count` distinct LongMemEval-S turns (as memory texts) and the dataset's questions."""
    questions = json.load(gzip.open(DATA))
    texts: dict[str, None] = {}
    for question in questions:
        for turn_ in turns_of(question):
            texts.setdefault(turn_["text"], None)
        if len(texts) >= count:
            break
    return list(texts)[:count], [q["question"] for q in questions]


async def sequential_gets(bench: Bench, path: str, key: str | None, count: int) -> list[float]:
    headers = bench.auth(key) if key else {}
    latencies = []
    for _ in range(count):
        start = time.perf_counter()
        r = await bench.http.get(path, headers=headers)
        latencies.append(time.perf_counter() - start)
        assert r.status_code == 200, r.text
    return latencies


async def load(
    http: aiohttp.ClientSession, path: str, keys: list[str], count: int, concurrency: int, body: Body
) -> str:
    """`count` POSTs from `concurrency` workers, each sending its next request when its last one answered
    (key i % len(keys)): 'N/s, p50, p95' of the acknowledged (2xx) ones, and how many were not.

    The client's own pauses would be counted as the server's latency, so its garbage collector is held off
    for the run: with 4,000 request coroutines created up front, a collection stopped it for 120-190 ms
    with nothing else busy (2026-12-02, per-process CPU sampled during the gaps between completions)."""
    latencies: list[float] = []
    errors: dict[int, int] = {}
    next_request = iter(range(count))

    async def worker() -> None:
        for i in next_request:  # shared: each request is taken by exactly one worker
            start = time.perf_counter()
            headers = {"Authorization": f"Bearer {keys[i % len(keys)]}"}
            async with http.post(path, json=body(i), headers=headers) as r:
                await r.read()
            if r.status in (200, 201):
                latencies.append(time.perf_counter() - start)
            else:
                errors[r.status] = errors.get(r.status, 0) + 1

    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(min(concurrency, count))))
        rate = len(latencies) / (time.perf_counter() - start)
    finally:
        gc.enable()
    failed = f"; NOT acknowledged: {errors}" if errors else ""
    return f"{rate:.0f}/s, {summary_ms(latencies)}{failed}"


async def embedded_rows(conn: asyncpg.Connection, tenant: str) -> int:
    return int(
        await conn.fetchval(
            "SELECT count(embedding_content_hash) FROM memories WHERE tenant_id = $1", uuid.UUID(tenant)
        )
    )


async def burst_and_drain(
    bench: Bench,
    http: aiohttp.ClientSession,
    tenant_id: str,
    key: str,
    texts: list[str],
    rows: Report,
) -> None:
    """The only agent of `tenant_id` writes `texts`; then wait until every one is embedded."""
    burst = len(texts)
    conn = await asyncpg.connect(bench.stack.database_url)
    try:
        start = time.perf_counter()
        rows[f"burst: {burst} writes (conversation turns), one agent, concurrency 64"] = await load(
            http, "/api/v1/memory", [key], burst, 64, lambda i: {"text": texts[i]}
        )
        written = time.perf_counter() - start
        while await embedded_rows(conn, tenant_id) < burst:
            await asyncio.sleep(0.1)
        drained = time.perf_counter() - start
        rows["burst: embedding worker drain"] = (
            f"all {burst} embedded {drained:.1f} s after the burst began ({written:.1f} s to write it)"
        )
    finally:
        await conn.close()


async def run(writes: int, burst: int, recalls: int, env: dict[str, str]) -> None:
    yardstick = embedding_yardstick()
    async with running_stack(env) as bench:
        tenant = await bench.tenant(memory_quota=1_000_000)
        key = await bench.agent_key(tenant, "bench-writer")
        await sequential_gets(bench, "/api/v1/whoami", key, 100)  # warm up
        health = await sequential_gets(bench, "/healthz", None, 500)
        whoami = await sequential_gets(bench, "/api/v1/whoami", key, 500)
        agents = [await bench.agent_key(tenant, f"bench-agent-{i}") for i in range(AGENTS)]
        burst_tenant = await bench.tenant(memory_quota=burst)
        burst_key = await bench.agent_key(burst_tenant, "bench-burst")
        rows = Report()
        rows["machine: a 20-token query's embedding, one thread"] = f"{yardstick:.2f} cpu-ms"
        rows["GET /healthz (no auth), sequential"] = summary_ms(health)
        rows["GET /api/v1/whoami (auth + scope), sequential"] = summary_ms(whoami)
        async with aiohttp.ClientSession(
            bench.stack.gateway_url, connector=aiohttp.TCPConnector(limit=128)
        ) as http:
            await load(http, "/api/v1/memory", agents, 256, 16, fact)  # warm every key into the caches
            for label, keys in (("one agent", [key]), (f"{AGENTS} agents", agents)):
                for concurrency in (16, 64):
                    rows[f"writes: {label}, concurrency {concurrency}"] = await load(
                        http, "/api/v1/memory", keys, writes, concurrency, fact
                    )
            for concurrency in (16, 64):
                rows[f"session appends: {AGENTS} agents, concurrency {concurrency}"] = await load(
                    http, "/api/v1/memory", agents, writes, concurrency, turn
                )
            texts, questions = conversations(burst)
            await burst_and_drain(bench, http, burst_tenant, burst_key, texts, rows)
            waited = await wait_subject_indexes(bench, burst_key, questions[0])
            rows["recall: subject indexes ready after"] = f"{waited:.1f} s"
            rows["recall: vector copy loaded after"] = await wait_subject_copy(bench, burst_key, questions[0])
            rows["recall: keyword copy loaded after"] = await wait_keyword_copy(
                bench, burst_key, questions[0]
            )

            def query(i: int) -> dict[str, Any]:
                return {"query": f"{questions[i % len(questions)]} {i}"}  # unique: never a cached embedding

            await load(http, "/api/v1/memory/recall", [burst_key], 50, 4, query)  # warm up
            async with http.post(
                "/api/v1/memory/recall", json=query(-1), headers={"Authorization": f"Bearer {burst_key}"}
            ) as r:
                rows["recall: strategy after warm-up"] = (await r.json())["meta"]["strategy"]
            rows[f"recalls: {burst} memories (hybrid), concurrency 16"] = await load(
                http, "/api/v1/memory/recall", [burst_key], recalls, 16, lambda i: query(i + 50)
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--writes", type=int, default=3000)
    parser.add_argument("--burst", type=int, default=10_000)
    parser.add_argument("--recalls", type=int, default=1000)
    parser.add_argument("--env", nargs="*", default=[], help="service settings to try, NAME=VALUE")
    args = parser.parse_args()
    env = dict(item.split("=", 1) for item in args.env)
    asyncio.run(run(args.writes, args.burst, args.recalls, env))


if __name__ == "__main__":
    main()
