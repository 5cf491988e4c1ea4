"""Recalls/s at concurrency 16 over one agent's 10,000 conversation turns, on a stack that can be kept.

`bench/memory_writes.py` measures the same recall round after its write rounds and a 10,000-write burst
(about ten minutes of writing and embedding). This bench does only the recall round, and with `--keep DIR`
it keeps the stack's data and the agent's key in DIR, so the next run (the code changed) skips the burst
and the embedding drain: what iterating on the read path needs. Queries are LongMemEval-S questions made
unique with a number (every query is embedded); the turns are that dataset's haystack turns.

It also prints the CPU each process of the stack spent per recall (psutil, over the measured round), and
the recall strategy the subject is served with.

    python bench/recall_throughput.py [--keep /tmp/cairn-recall-bench] [--recalls 1000] [--mode hybrid]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path
from typing import Any

import aiohttp
import psutil
from memory_writes import Report, burst_and_drain, conversations, load

from cairn_recall.settings import RecallSettings
from harness import (
    Bench,
    embedding_yardstick,
    running_stack,
    wait_keyword_copy,
    wait_subject_copy,
    wait_subject_indexes,
)

CONCURRENCY = 16
SUBJECT_INDEX_MIN_ROWS = RecallSettings.model_fields["subject_index_min_rows"].default


def shortened(text: str, max_chars: int) -> str:
    """`text` cut to at most `max_chars` at a word boundary (0: whole)."""
    if not max_chars or len(text) <= max_chars:
        return text
    return text[:max_chars].rsplit(" ", 1)[0]


async def burst_subject(
    bench: Bench, http: aiohttp.ClientSession, keep: Path | None, burst: int, max_chars: int
) -> str:
    """The key of an agent holding `burst` embedded turns (each cut to `max_chars`): the kept one when DIR
    has it, else a new one."""
    state = keep / f"recall_bench_{burst}_{max_chars}.json" if keep else None
    if state and state.exists():
        return str(json.loads(state.read_text())["key"])
    tenant = await bench.tenant(memory_quota=burst)
    key = str(await bench.agent_key(tenant, "bench-burst"))
    texts, _ = conversations(burst * 2)
    texts = list(dict.fromkeys(shortened(t, max_chars) for t in texts))[:burst]
    await burst_and_drain(bench, http, tenant, key, texts, Report())
    if state:
        state.write_text(json.dumps({"key": key}))
    return key


def stack_cpu_seconds() -> dict[str, float]:
    """CPU seconds (user + system) so far of this process's children, by command-line name. A process's
    reaped children count too: PostgreSQL's backends that exit (a pool's overflow connections are closed on
    return) leave their time in the postmaster's, which would otherwise drop out of the totals."""
    totals: dict[str, float] = {}
    for proc in psutil.Process().children(recursive=True):
        try:
            cmd = " ".join(proc.cmdline())
            times = proc.cpu_times()
            name = proc.name()
        except psutil.Error:
            continue
        if name.startswith("python"):
            name = next((part for part in cmd.split() if part.startswith("cairn_")), name)
        own = times.user + times.system + times.children_user + times.children_system
        totals[name] = totals.get(name, 0.0) + own
    return totals


async def run(
    keep: Path | None,
    burst: int,
    max_chars: int,
    recalls: int,
    mode: str,
    env: dict[str, str],
    recall_replicas: int = 1,
) -> None:
    yardstick = embedding_yardstick()
    async with running_stack(extra_env=env, keep_dir=keep) as bench:
        async with aiohttp.ClientSession(
            bench.stack.gateway_url, connector=aiohttp.TCPConnector(limit=64)
        ) as http:
            key = await burst_subject(bench, http, keep, burst, max_chars)
            for extra in range(2, recall_replicas + 1):  # NATS's queue group splits the recalls among them
                await bench.stack.start_service(f"recall-{extra}", "cairn_recall")
            _, questions = conversations(1)
            rows = Report()
            rows["recall service replicas"] = str(recall_replicas)
            rows["machine: a 20-token query's embedding, one thread"] = f"{yardstick:.2f} cpu-ms"
            # A subject at most the index threshold is recalled exactly from SQL: no indexes, no copy.
            if burst > int(env.get("CAIRN_SUBJECT_INDEX_MIN_ROWS", SUBJECT_INDEX_MIN_ROWS)):
                rows["recall: subject indexes ready after"] = (
                    f"{await wait_subject_indexes(bench, key, questions[0]):.1f} s"
                )
                rows["recall: vector copy loaded after"] = await wait_subject_copy(bench, key, questions[0])
                rows["recall: keyword copy loaded after"] = await wait_keyword_copy(bench, key, questions[0])
            stamp = time.time_ns()

            def query(i: int) -> dict[str, Any]:
                # unique per run and per call: never a cached embedding or lexeme list
                return {"query": f"{questions[i % len(questions)]} {stamp % 100_000}{i}", "mode": mode}

            # warm up: every replica loads its copies
            await load(http, "/api/v1/memory/recall", [key], 100 * recall_replicas, 4, query)
            await asyncio.sleep(1.0)
            async with http.post(
                "/api/v1/memory/recall", json=query(-1), headers={"Authorization": f"Bearer {key}"}
            ) as r:
                rows["recall: strategy after warm-up"] = (await r.json())["meta"]["strategy"]
            before = stack_cpu_seconds()
            client_before = psutil.Process().cpu_times()
            what = f"turns cut to {max_chars} chars" if max_chars else "turns"
            rows[f"recalls: {burst} {what} ({mode}), concurrency {CONCURRENCY}"] = await load(
                http, "/api/v1/memory/recall", [key], recalls, CONCURRENCY, lambda i: query(i + 100)
            )
            after = stack_cpu_seconds()
            client_after = psutil.Process().cpu_times()
            spent = {name: (after[name] - before.get(name, 0.0)) * 1000 / recalls for name in after}
            spent["bench client"] = (
                ((client_after.user - client_before.user) + (client_after.system - client_before.system))
                * 1000
                / recalls
            )
            for name, ms in sorted(spent.items(), key=lambda kv: -kv[1]):
                if ms >= 0.05:
                    rows[f"cpu-ms per recall: {name}"] = f"{ms:.2f}"
            rows["cpu-ms per recall: all"] = f"{sum(spent.values()):.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--keep", type=Path, default=None, help="data dir to keep (and reuse) the loaded stack"
    )
    parser.add_argument("--burst", type=int, default=10_000)
    parser.add_argument("--recalls", type=int, default=1000)
    parser.add_argument(
        "--max-chars",
        type=int,
        default=0,
        help="cut each turn to this many characters (short memories, no chunks)",
    )
    parser.add_argument("--mode", default="hybrid", choices=("hybrid", "semantic", "keyword"))
    parser.add_argument("--env", action="append", default=[], help="a service setting NAME=VALUE")
    parser.add_argument(
        "--recall-replicas", type=int, default=1, help="recall service processes (one event loop each)"
    )
    args = parser.parse_args()
    env = dict(pair.split("=", 1) for pair in args.env)
    asyncio.run(
        run(args.keep, args.burst, args.max_chars, args.recalls, args.mode, env, args.recall_replicas)
    )


if __name__ == "__main__":
    main()
