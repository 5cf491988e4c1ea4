"""A private Cairn stack for a benchmark run: temp dir, free ports, a superadmin key, tenant helpers."""

from __future__ import annotations

import asyncio
import secrets
import shutil
import statistics
import tempfile
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

from cairn_client import AsyncCairnClient
from cairn_devstack import StackPorts, free_port
from cairn_devstack.cairn import CairnConfig, CairnStack
from cairn_embeddings import LocalOnnxEmbedder
from cairn_gateway.cli import bootstrap

BENCH_ENV = {
    "CAIRN_RATE_LIMIT_PER_SECOND": "1000000",
    "CAIRN_RATE_LIMIT_BURST": "1000000",
    "CAIRN_LOG_LEVEL": "WARNING",
}


@dataclass
class Bench:
    stack: CairnStack
    http: httpx.AsyncClient
    admin_key: str

    def auth(self, key: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {key}"}

    @property
    def admin(self) -> AsyncCairnClient:
        """The SDK with the superadmin key (operator calls); `http` stays for timing raw REST calls."""
        return AsyncCairnClient(self.stack.gateway_url, self.admin_key, timeout=60)

    async def tenant(self, **limits: int) -> str:
        """A fresh tenant; benchmarks measure speed, not the per-key read rate limit, so it is lifted."""
        reads = {"read_rate_limit_per_second": 100_000, "read_rate_limit_burst": 1_000_000}
        async with self.admin as admin:
            tenant = await admin.create_tenant(f"bench-{uuid.uuid4().hex[:10]}")
            await admin.patch_tenant(tenant.id, **{**reads, **limits})
        return tenant.id

    async def agent_key(self, tenant_id: str, agent_id: str) -> str:
        async with self.admin as admin:
            created = await admin.create_key("agent", tenant_id=tenant_id, agent_id=agent_id)
        return created.key


@asynccontextmanager
async def running_stack(
    extra_env: dict[str, str] | None = None, keep_dir: Path | None = None
) -> AsyncIterator[Bench]:
    """A private stack; with `keep_dir` its data lives there and survives the run (reused next time)."""
    data_dir = keep_dir or Path(tempfile.mkdtemp(prefix="cairn-bench-"))
    data_dir.mkdir(parents=True, exist_ok=True)
    config = CairnConfig(
        data_dir=data_dir,
        provider_secrets_key=secrets.token_urlsafe(32),
        ports=StackPorts.free(),
        gateway_port=free_port(),
        service_env={**BENCH_ENV, **(extra_env or {})},
    )
    try:
        async with CairnStack(config) as stack:
            admin = (await bootstrap(stack.database_url, None))["admin_key"]
            async with httpx.AsyncClient(base_url=stack.gateway_url, timeout=60) as http:
                yield Bench(stack, http, str(admin))
    finally:
        if keep_dir is None:
            shutil.rmtree(data_dir, ignore_errors=True)


def embedding_yardstick(calls: int = 300) -> float:
    """cpu-ms of one 20-token question's embedding on one thread, in this process (call it before the
    stack is loaded): how fast this machine is right now. It moved from 2.1 to 3.4 ms within one hour of
    one session (2026-12-02) with nothing else running, and a write's cpu-ms with it: compare the
    throughput of runs made at the same yardstick."""
    embedder = LocalOnnxEmbedder.load(threads=1)
    query = ["What was the name of the restaurant my sister recommended when we talked about Lisbon?"]
    for _ in range(20):
        embedder.embed_sync(query)
    started = time.process_time()
    for _ in range(calls):
        embedder.embed_sync(query)
    return (time.process_time() - started) * 1000 / calls


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def summary_ms(values: list[float]) -> str:
    return (
        f"p50 {statistics.median(values) * 1000:.2f} ms, p95 {percentile(values, 0.95) * 1000:.2f} ms, "
        f"n={len(values)}"
    )


async def gather_limited(limit: int, coros: list[object]) -> list[object]:
    sem = asyncio.Semaphore(limit)

    async def run(coro: object) -> object:
        async with sem:
            return await coro  # type: ignore[misc]

    return await asyncio.gather(*(run(c) for c in coros))


async def _recall_served_by(
    bench: Bench, key: str, query: str, strategies: tuple[str, ...], timeout: float
) -> float | None:
    """Seconds until a semantic recall of `key`'s subject reports one of `strategies`; None past `timeout`."""
    start = time.perf_counter()
    while time.perf_counter() - start < timeout:
        r = await bench.http.post(
            "/api/v1/memory/recall", headers=bench.auth(key), json={"query": query, "mode": "semantic"}
        )
        if r.status_code == 200 and r.json()["meta"]["strategy"] in strategies:
            return time.perf_counter() - start
        await asyncio.sleep(0.5)
    return None


async def wait_subject_indexes(bench: Bench, key: str, query: str, timeout: float = 300.0) -> float:
    """A subject past CAIRN_SUBJECT_INDEX_MIN_ROWS gets its own indexes, built in the background after its
    first recall: wait until recall uses them (the steady state to measure); the seconds it took."""
    waited = await _recall_served_by(bench, key, query, ("subject_ann", "subject_exact"), timeout)
    if waited is None:
        raise RuntimeError("the subject's indexes never became ready")
    return waited


async def wait_subject_copy(bench: Bench, key: str, query: str, timeout: float = 60.0) -> str:
    """A subject's recall is served from the recall replica's copy of its vectors (`subject_exact`) once
    the copy is loaded, a few seconds after its vectors stop changing; until then it takes the SQL path
    (`subject_ann`). How long the copy took ("not loaded" when it did not within `timeout`: too large a
    subject, or copies disabled), so a measured round is the steady state, not the minutes after a burst."""
    waited = await _recall_served_by(bench, key, query, ("subject_exact",), timeout)
    return f"not loaded after {timeout:.0f} s" if waited is None else f"{waited:.1f} s"


async def _keyword_sides(bench: Bench) -> dict[str, float]:
    """Large-subject keyword sides so far, by source ("copy": a replica's postings, "sql"), over every recall
    replica of the stack (`cairn_recall_keyword_sides_total`)."""
    totals = {"copy": 0.0, "sql": 0.0}
    for name in bench.stack.http_ports:
        if name == "recall" or name.startswith("recall-"):
            metrics = (await bench.http.get(f"{bench.stack.http_url(name)}/metrics")).text
            for family in text_string_to_metric_families(metrics):
                if family.name == "cairn_recall_keyword_sides":
                    for sample in family.samples:
                        if sample.name.endswith("_total"):
                            totals[sample.labels["source"]] += sample.value
    return totals


async def wait_keyword_copy(
    bench: Bench, key: str, query: str, timeout: float = 60.0, streak: int = 8
) -> str:
    """A large subject's keyword side is scored from the replica's copy of its postings once that copy is
    loaded. It loads on its own, after the first hybrid recall that finds it missing (a semantic recall, as
    `wait_subject_copy` sends, never asks for it), and until then each recall takes BM25 in SQL: measured on
    2026-12-04, the first 1,000 recalls after the warm-up ran at 206/s against 241-244/s once it was loaded.
    Hybrid recalls until `streak` in a row were scored from a copy (with several replicas, each has likely
    loaded its own); how long it took ("not loaded" past `timeout`: too many postings, or copies disabled)."""
    start = time.perf_counter()
    clean = 0
    while time.perf_counter() - start < timeout:
        before = await _keyword_sides(bench)
        r = await bench.http.post(
            "/api/v1/memory/recall", headers=bench.auth(key), json={"query": query, "mode": "hybrid"}
        )
        after = await _keyword_sides(bench)
        copied = r.status_code == 200 and after["sql"] == before["sql"] and after["copy"] > before["copy"]
        clean = clean + 1 if copied else 0
        if clean >= streak:
            return f"{time.perf_counter() - start:.1f} s"
        if not copied:
            await asyncio.sleep(0.5)
    return f"not loaded after {timeout:.0f} s"
