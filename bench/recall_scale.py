"""Recall at scale through the real stack.

Part 1 loads >= 200,000 live memories across >= 200 subjects in 3 tenants (bulk COPY, then the HNSW indexes
are built), adds a needle subject with 50 real memories written through the gateway, and measures for the
needle's queries: recall@10 against exact kNN over the needle's own rows, p50/p95 latency of
`POST /api/v1/memory/recall` through the gateway (query embedding included), and the bare SQL. It runs with
the default planner (small subjects are searched exactly) and with the large-subject ANN path forced for
every subject (CAIRN_RECALL_EXACT_MAX_ROWS=0).

Part 2 adds a tenant of >= 500,000 rows holding one large subject of 20,000 memories (`--big-rows`,
`--big-subject`), whose rows are near-copies of the same texts as everyone else's, and measures that
subject's own-top-10 recall against exact kNN (numpy over its own vectors) and the gateway latency, on the
ANN path it takes by default. It prints the EXPLAIN of the statement the recall service runs.

    python bench/recall_scale.py [--rows 200000] [--subjects 210] [--big-rows 500000] [--big-subject 20000]

Haystack vectors are real MiniLM embeddings of ~3,000 distinct memory texts (the other subjects of
bench/data/retrieval_eval_v1.json plus templated facts), each reused with Gaussian jitter so that rows are
distinct but keep the model's geometry.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import statistics
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import asyncpg
import numpy as np
from pgvector.asyncpg import register_vector
from sqlalchemy import text

from cairn_contracts.identity import Role
from cairn_embeddings import EmbeddingSettings, LocalOnnxEmbedder
from cairn_recall.keyword import keyword_statement
from cairn_recall.settings import RecallSettings
from cairn_recall.store import RecallStore
from cairn_recall.term_stats import SubjectTermStats
from cairn_scope import Scope, generate_signing_key
from cairn_storage import create_engine, make_sessionmaker
from cairn_storage.explain import Explain
from cairn_storage.fulltext import QueryLexemes
from harness import Bench, percentile, running_stack

DATA = Path(__file__).parent / "data" / "retrieval_eval_v1.json"
TOPICS = [
    "deploy",
    "invoice",
    "flight",
    "allergy",
    "database",
    "meeting",
    "budget",
    "ticket",
    "recipe",
    "workout",
    "contract",
    "renovation",
    "thesis",
    "incident",
    "refund",
    "playlist",
    "garden",
    "insurance",
    "visa",
    "lease",
]
PEOPLE = ["Alice", "Bob", "Chen", "Dara", "Emeka", "Farah", "Goran", "Hana", "Ivo", "Jun", "Kofi", "Lena"]


def haystack_texts(dataset: dict[str, Any], count: int, rng: random.Random) -> list[str]:
    texts = [m["text"] for s in dataset["subjects"] if s["subject"] != "s01" for m in s["memories"]]
    while len(texts) < count:
        texts.append(
            f"{rng.choice(PEOPLE)} said the {rng.choice(TOPICS)} for {rng.choice(TOPICS)} is due on day "
            f"{rng.randint(1, 28)} and owned by {rng.choice(PEOPLE)} (ref {rng.randint(1000, 9999)})"
        )
    return texts


Assign = Callable[[int], tuple[str, str]]  # row index -> (tenant id, subject id)


async def bulk_load(
    bench: Bench,
    rows: int,
    assign: Assign,
    base: np.ndarray,
    texts: list[str],
    *,
    seed: int,
    keep_subject: str | None = None,
) -> np.ndarray:
    """COPY `rows` jittered memories (HNSW index dropped meanwhile, rebuilt after); returns the vectors of
    `keep_subject` (for exact ground truth in numpy)."""
    rng = np.random.default_rng(seed)
    kept: list[np.ndarray] = []
    conn = await asyncpg.connect(bench.stack.database_url)
    await register_vector(conn)
    try:
        await conn.execute("DROP INDEX IF EXISTS memories_live_embedding_hnsw_idx")
        start = time.perf_counter()
        batch = 20_000
        for offset in range(0, rows, batch):
            n = min(batch, rows - offset)
            picks = rng.integers(0, len(base), n)
            vectors = base[picks] + rng.normal(scale=0.02, size=(n, base.shape[1]))
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            owners = [assign(offset + i) for i in range(n)]
            if keep_subject is not None:
                kept.extend(vectors[i] for i in range(n) if owners[i][1] == keep_subject)
            records = [
                (
                    uuid.uuid4(),
                    uuid.UUID(owners[i][0]),
                    owners[i][1],
                    f"{texts[picks[i]]} (note {offset + i})",
                    vectors[i].astype(np.float32),
                    "bulk",
                    "bench",
                )
                for i in range(n)
            ]
            await conn.copy_records_to_table(
                "memories",
                records=records,
                columns=[
                    "id",
                    "tenant_id",
                    "subject_id",
                    "text",
                    "embedding",
                    "embedding_content_hash",
                    "embedding_model",
                ],
            )
        print(f"bulk COPY of {rows} rows: {time.perf_counter() - start:.1f} s")
        start = time.perf_counter()
        await conn.execute("SET maintenance_work_mem = '4GB'")
        await conn.execute(
            "CREATE INDEX memories_live_embedding_hnsw_idx ON memories USING hnsw (embedding vector_cosine_ops) "
            "WITH (m = 16, ef_construction = 64) WHERE superseded_by IS NULL"
        )
        total = await conn.fetchval("SELECT count(*) FROM memories")
        print(f"HNSW index build over {total} rows: {time.perf_counter() - start:.1f} s")
        # The steady state a served table is in: without this, autovacuum of the freshly copied rows runs
        # during the measurements, and the first reads of every row set its hint bits.
        start = time.perf_counter()
        await conn.execute("VACUUM (ANALYZE) memories")
        print(f"VACUUM (ANALYZE): {time.perf_counter() - start:.1f} s")
    finally:
        await conn.close()
    return np.array(kept)


async def recall_plan(
    bench: Bench, tenant: str, subject: str, vector: np.ndarray, env: dict[str, str]
) -> str:
    """EXPLAIN ANALYZE of the large-subject statement exactly as the recall service builds and runs it."""
    engine = create_engine(bench.stack.database_url, pool_size=1).execution_options(cairn_maintenance="bench")
    scope = Scope(tenant_id=tenant, subject_id=subject, role=Role.agent, key_id="bench")
    overrides: dict[str, Any] = {k.removeprefix("CAIRN_").lower(): v for k, v in env.items()}
    settings = RecallSettings(scope_verify_keys=generate_signing_key("gateway.bench")[1], **overrides)
    try:
        async with make_sessionmaker(engine).begin() as session:
            store = RecallStore(session)
            await store.plan_with_constants()  # as recall does for a subject with its own indexes
            pool = max(settings.recall_pool_min, settings.semantic_depth * settings.recall_pool_factor)
            await store.set_ann_options(
                max(settings.hnsw_ef_search, pool),
                settings.hnsw_iterative_scan,
                settings.hnsw_max_scan_tuples,
                settings.hnsw_scan_mem_multiplier,
            )
            await session.execute(text("SELECT set_config('enable_sort', 'off', true)"))  # as RecallStore.ann
            stmt = store.ann_statement(scope, vector.tolist(), settings.semantic_depth, pool, None)
            lines = [r[0] for r in await session.execute(Explain(stmt, "ANALYZE, COSTS OFF, TIMING OFF"))]
            return "\n".join(re.sub(r"'\[[^']*\]'::vector", "$query_vector", line) for line in lines)
    finally:
        await engine.dispose()


async def keyword_plan(bench: Bench, tenant: str, subject: str, query: str) -> str:
    """EXPLAIN ANALYZE of the large-subject BM25 statement as recall builds it (term statistics included)."""
    engine = create_engine(bench.stack.database_url, pool_size=1).execution_options(cairn_maintenance="bench")
    scope = Scope(tenant_id=tenant, subject_id=subject, role=Role.agent, key_id="bench")
    try:
        async with make_sessionmaker(engine).begin() as session:
            # The keyword door answers only for the transaction's own scope (EXPLAIN hides it from the hook).
            await session.execute(
                text(
                    "SELECT set_config('cairn.tenant_id', :t, true), set_config('cairn.subject_id', :s, true)"
                ),
                {"t": tenant, "s": subject},
            )
            lexemes = await QueryLexemes()(session, query)
            stats = await SubjectTermStats(10, 60.0).for_query(session, scope, lexemes)
            stmt = keyword_statement(scope, lexemes, 50, None, stats=stats)
            if stmt is None:
                return "(no candidate term)"
            lines = [r[0] for r in await session.execute(Explain(stmt, "ANALYZE, COSTS OFF, TIMING OFF"))]
            return "\n".join([f"terms {stats.df}", *lines])
    finally:
        await engine.dispose()


async def gateway_latency(
    bench: Bench,
    key: str,
    queries: list[str],
    rounds: int,
    label: str,
    truth: list[set[str]] | None,
    modes: tuple[str, ...] = ("semantic", "hybrid"),
) -> None:
    for mode in modes:
        cold: list[float] = []
        warm: list[float] = []
        recalls: list[float] = []
        strategies: set[str] = set()
        for r in range(rounds):
            for i, q in enumerate(queries):
                start = time.perf_counter()
                resp = await bench.http.post(
                    "/api/v1/memory/recall",
                    headers=bench.auth(key),
                    json={"query": q, "limit": 10, "mode": mode},
                )
                (cold if r == 0 else warm).append(time.perf_counter() - start)
                body = resp.json()
                if resp.status_code != 200:
                    raise RuntimeError(f"recall answered {resp.status_code}: {body}")
                strategies.add(f"{body['meta']['strategy']}/{body['meta'].get('ann_iterative_scan', '-')}")
                if r == 0 and mode == "semantic" and truth is not None:
                    got = {h["memory"]["id"] for h in body["data"]}
                    recalls.append(len(got & truth[i]) / max(1, len(truth[i])))
        gateway_all = cold + warm
        print(
            f"[{label}] {mode:8s} via gateway: p50 {statistics.median(gateway_all) * 1000:.1f} ms, "
            f"p95 {percentile(gateway_all, 0.95) * 1000:.1f} ms (n={len(gateway_all)}); uncached-embedding "
            f"round p50 {statistics.median(cold) * 1000:.1f} ms, p95 {percentile(cold, 0.95) * 1000:.1f} ms; "
            f"strategy {sorted(strategies)}"
        )
        if recalls:
            print(
                f"[{label}] own-top-10 recall vs exact kNN over the subject's own rows: "
                f"{statistics.mean(recalls):.3f} (min {min(recalls):.2f}, {len(recalls)} queries)"
            )


async def wait_subject_indexes(bench: Bench, key: str, query: str) -> None:
    """The first recalls started the subject's index build in the background; wait until recall uses it."""
    start = time.perf_counter()
    while True:
        resp = await bench.http.post(
            "/api/v1/memory/recall", headers=bench.auth(key), json={"query": query, "mode": "semantic"}
        )
        if resp.json()["meta"]["strategy"] in ("subject_ann", "subject_exact"):
            break
        await asyncio.sleep(1.0)
    print(f"subject's own indexes ready {time.perf_counter() - start:.1f} s after the first check")


# The bench's exact truth: `+ 0` keeps the planner off the HNSW index (an index cannot order by it).
EXACT_SQL = (
    "SELECT id FROM memories WHERE tenant_id = $1 AND subject_id = $3 AND superseded_by IS NULL "
    "AND embedding IS NOT NULL ORDER BY (embedding <=> $2) + 0 LIMIT 10"
)


async def exact_truth(
    bench: Bench, tenant: str, subject: str, vectors: np.ndarray
) -> tuple[list[set[str]], float]:
    conn = await asyncpg.connect(bench.stack.database_url)
    await register_vector(conn)
    try:
        truth, times = [], []
        for v in vectors:
            start = time.perf_counter()
            rows = await conn.fetch(EXACT_SQL, uuid.UUID(tenant), v, subject)
            times.append(time.perf_counter() - start)
            truth.append({str(r["id"]) for r in rows})
    finally:
        await conn.close()
    return truth, statistics.median(times)


async def run(
    rows: int,
    subjects: int,
    rounds: int,
    big_rows: int,
    big_subject: int,
    env: dict[str, str],
    forced_ann: bool = True,
) -> None:
    dataset = json.loads(DATA.read_text())
    rng = random.Random(5)
    embedder = LocalOnnxEmbedder.load(cache_dir=EmbeddingSettings().model_cache_dir)
    texts = haystack_texts(dataset, 3000, rng)
    start = time.perf_counter()
    base = embedder.embed_array(texts).astype(np.float64)
    print(f"embedded {len(texts)} distinct haystack texts in {time.perf_counter() - start:.1f} s")
    needle = next(s for s in dataset["subjects"] if s["subject"] == "s01")
    needle_texts = [m["text"] for m in needle["memories"][:50]]
    queries = [q["query"] for q in needle["queries"]]
    # One query at a time, as the recall service embeds them (int8 activations are quantised per batch).
    query_vectors = np.stack([embedder.embed_array([q])[0] for q in queries])

    async with running_stack(env) as bench:
        tenants = [await bench.tenant(memory_quota=1_000_000) for _ in range(3)]
        await bulk_load(
            bench, rows, lambda i: (tenants[i % 3], f"subject-{i % subjects}"), base, texts, seed=11
        )
        key = await bench.agent_key(tenants[0], "needle")
        for text in needle_texts:
            r = await bench.http.post("/api/v1/memory", headers=bench.auth(key), json={"text": text})
            r.raise_for_status()
        conn = await asyncpg.connect(bench.stack.database_url)
        try:
            while await conn.fetchval(
                "SELECT count(*) FROM memories WHERE subject_id = 'needle' AND embedding_content_hash IS NULL"
            ):
                await asyncio.sleep(0.2)
            total = await conn.fetchval("SELECT count(*) FROM memories WHERE superseded_by IS NULL")
            distinct = await conn.fetchval("SELECT count(DISTINCT (tenant_id, subject_id)) FROM memories")
        finally:
            await conn.close()
        print(
            f"corpus: {total} live memories, {distinct} subjects, {len(tenants)} tenants; needle: 50 memories, "
            f"{len(queries)} queries"
        )
        truth, bare = await exact_truth(bench, tenants[0], "needle", query_vectors)
        print(f"bare SQL exact top-10 over the needle's rows: p50 {bare * 1000:.2f} ms")
        await gateway_latency(bench, key, queries, rounds, "200k, default planner", truth)
        if forced_ann:
            await bench.stack.supervisor.stop("recall")
            await bench.stack.start_service("recall", "cairn_recall", **env, CAIRN_RECALL_EXACT_MAX_ROWS="0")
            await bench.stack.wait_ready()
            await gateway_latency(bench, key, queries, rounds, "200k, ANN path forced", truth)
            await bench.stack.supervisor.stop("recall")
            await bench.stack.start_service("recall", "cairn_recall", **env)
            await bench.stack.wait_ready()
        if not big_rows:
            return

        big = await bench.tenant(memory_quota=1_000_000)
        every = max(1, big_rows // big_subject)
        others = max(1, (big_rows - big_subject) // 1000)

        def assign(i: int) -> tuple[str, str]:
            return big, ("big" if i % every == 0 else f"crowd-{i % others}")

        big_vectors = await bulk_load(bench, big_rows, assign, base, texts, seed=13, keep_subject="big")
        big_key = await bench.agent_key(big, "big")
        truth, bare = await exact_truth(bench, big, "big", query_vectors)
        print(
            f"large subject: {len(big_vectors)} memories in a tenant of {big_rows} rows "
            f"({others} other subjects); bare SQL exact top-10 over its rows p50 {bare * 1000:.2f} ms"
        )
        # Before: the tenant-wide HNSW (subject indexes off); after: the subject's own indexes.
        await bench.stack.supervisor.stop("recall")
        await bench.stack.start_service("recall", "cairn_recall", **env, CAIRN_SUBJECT_INDEX_MIN_ROWS="0")
        await bench.stack.wait_ready()
        await gateway_latency(
            bench, big_key, queries, rounds, f"{len(big_vectors)}-row subject, tenant-wide HNSW", truth
        )
        await bench.stack.supervisor.stop("recall")
        await bench.stack.start_service("recall", "cairn_recall", **env)
        await bench.stack.wait_ready()
        await wait_subject_indexes(bench, big_key, queries[0])
        await gateway_latency(
            bench,
            big_key,
            queries,
            rounds,
            f"{len(big_vectors)}-row subject, own indexes",
            truth,
            modes=("semantic", "hybrid", "keyword"),
        )
        print("plan of the large-subject statement (EXPLAIN ANALYZE):")
        print(await recall_plan(bench, big, "big", query_vectors[0], env))
        print("plan of the large-subject BM25 statement (EXPLAIN ANALYZE):")
        print(await keyword_plan(bench, big, "big", queries[0]))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--subjects", type=int, default=210)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--big-rows", type=int, default=500_000, help="0 skips part 2")
    parser.add_argument("--big-subject", type=int, default=20_000)
    parser.add_argument(
        "--no-forced-ann", action="store_true", help="skip the 200k run with the ANN path forced (diagnostic)"
    )
    parser.add_argument("--env", default="", help="recall settings, e.g. CAIRN_HNSW_EF_SEARCH=1000")
    args = parser.parse_args()
    env = dict(pair.split("=", 1) for pair in args.env.split(",") if pair)
    asyncio.run(
        run(
            args.rows,
            args.subjects,
            args.rounds,
            args.big_rows,
            args.big_subject,
            env,
            not args.no_forced_ann,
        )
    )


if __name__ == "__main__":
    main()
