"""Recall at scale through the real stack.

Loads >= 200,000 live memories across >= 200 subjects in 3 tenants (bulk COPY, then the HNSW index is built),
adds a needle subject with 50 real memories written through the gateway, and measures for the needle's
queries: recall@10 against exact kNN over the needle's own rows, p50/p95 latency of
`POST /api/v1/memory/recall` through the gateway (query embedding included), and the p50 of the bare SQL for
the same queries. It runs twice: with the default planner (small subjects are searched exactly) and with the
index-safe ANN path forced for every subject (CAIRN_RECALL_EXACT_MAX_ROWS=0).

    python bench/recall_scale.py [--rows 200000] [--subjects 210] [--rounds 3]

Haystack vectors are real MiniLM embeddings of ~3,000 distinct memory texts (the other subjects of
bench/data/retrieval_eval_v1.json plus templated facts), each reused with Gaussian jitter so that rows are
distinct but keep the model's geometry.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import time
import uuid
from pathlib import Path
from typing import Any

import asyncpg
import numpy as np
from pgvector.asyncpg import register_vector

from cairn_embeddings import EmbeddingSettings, LocalOnnxEmbedder
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


async def bulk_load(
    bench: Bench, tenants: list[str], rows: int, subjects: int, base: np.ndarray, texts: list[str]
) -> None:
    rng = np.random.default_rng(11)
    conn = await asyncpg.connect(bench.stack.database_url)
    await register_vector(conn)
    try:
        await conn.execute("DROP INDEX memories_live_embedding_hnsw_idx")
        start = time.perf_counter()
        batch = 20_000
        for offset in range(0, rows, batch):
            n = min(batch, rows - offset)
            picks = rng.integers(0, len(base), n)
            vectors = base[picks] + rng.normal(scale=0.02, size=(n, base.shape[1]))
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            records = [
                (
                    uuid.uuid4(),
                    uuid.UUID(tenants[(offset + i) % len(tenants)]),
                    f"subject-{(offset + i) % subjects}",
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
        await conn.execute("SET maintenance_work_mem = '2GB'")
        await conn.execute(
            "CREATE INDEX memories_live_embedding_hnsw_idx ON memories USING hnsw (embedding vector_cosine_ops) "
            "WITH (m = 16, ef_construction = 64) WHERE superseded_by IS NULL"
        )
        await conn.execute("ANALYZE memories")
        print(f"HNSW index build over {rows} rows: {time.perf_counter() - start:.1f} s")
    finally:
        await conn.close()


async def measure(
    bench: Bench, key: str, tenant: str, queries: list[str], vectors: np.ndarray, rounds: int, label: str
) -> None:
    conn = await asyncpg.connect(bench.stack.database_url)
    await register_vector(conn)
    exact_sql = (
        "SELECT id FROM memories WHERE tenant_id = $1 AND subject_id = 'needle' AND superseded_by IS NULL "
        "AND embedding IS NOT NULL ORDER BY embedding <=> $2 LIMIT 10"
    )
    ann_sql = (
        "SELECT id FROM (SELECT id, subject_id, project_id, embedding <=> $2 AS d FROM memories "
        "WHERE tenant_id = $1 AND embedding IS NOT NULL AND superseded_by IS NULL ORDER BY embedding <=> $2 "
        "LIMIT 200) pool WHERE subject_id = 'needle' AND project_id IS NULL ORDER BY d LIMIT 10"
    )
    try:
        truth = [{str(r["id"]) for r in await conn.fetch(exact_sql, uuid.UUID(tenant), v)} for v in vectors]
        bare: dict[str, list[float]] = {"exact": [], "ann": []}
        for name, sql in (("exact", exact_sql), ("ann", ann_sql)):
            for v in vectors:
                async with conn.transaction():
                    await conn.execute("SET LOCAL hnsw.ef_search = 200")
                    await conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
                    start = time.perf_counter()
                    await conn.fetch(sql, uuid.UUID(tenant), v)
                    bare[name].append(time.perf_counter() - start)
        plan = "\n".join(r[0] for r in await conn.fetch("EXPLAIN " + ann_sql, uuid.UUID(tenant), vectors[0]))
    finally:
        await conn.close()
    for mode in ("semantic", "hybrid"):
        cold: list[float] = []
        warm: list[float] = []
        recalls: list[float] = []
        strategies: set[str] = set()
        for r in range(rounds):
            for q, expected in zip(queries, truth, strict=True):
                start = time.perf_counter()
                resp = await bench.http.post(
                    "/api/v1/memory/recall",
                    headers=bench.auth(key),
                    json={"query": q, "limit": 10, "mode": mode},
                )
                (cold if r == 0 else warm).append(time.perf_counter() - start)
                body = resp.json()
                strategies.add(f"{body['meta']['strategy']}/{body['meta'].get('ann_iterative_scan', '-')}")
                if r == 0 and mode == "semantic":
                    got = {h["memory"]["id"] for h in body["data"]}
                    recalls.append(len(got & expected) / max(1, len(expected)))
        gateway_all = cold + warm
        print(
            f"[{label}] {mode:8s} via gateway: p50 {statistics.median(gateway_all) * 1000:.1f} ms, "
            f"p95 {percentile(gateway_all, 0.95) * 1000:.1f} ms (n={len(gateway_all)}); uncached-embedding "
            f"round p50 {statistics.median(cold) * 1000:.1f} ms, p95 {percentile(cold, 0.95) * 1000:.1f} ms; "
            f"strategy {sorted(strategies)}"
        )
        if recalls:
            print(
                f"[{label}] needle recall@10 vs exact kNN over its own rows: {statistics.mean(recalls):.3f} "
                f"(min {min(recalls):.2f}, {len(recalls)} queries)"
            )
    print(
        f"[{label}] bare SQL p50: exact-over-subject {statistics.median(bare['exact']) * 1000:.2f} ms, "
        f"index-safe ANN pool {statistics.median(bare['ann']) * 1000:.2f} ms"
    )
    print(f"[{label}] ANN plan at scale: {'HNSW index' if 'hnsw_idx' in plan else 'NO HNSW'}")


async def run(rows: int, subjects: int, rounds: int) -> None:
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

    async with running_stack() as bench:
        tenants = [await bench.tenant(memory_quota=1_000_000) for _ in range(3)]
        await bulk_load(bench, tenants, rows, subjects, base, texts)
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
        await measure(bench, key, tenants[0], queries, query_vectors, rounds, "default planner")
        await bench.stack.supervisor.stop("recall")
        await bench.stack.start_service("recall", "cairn_recall", CAIRN_RECALL_EXACT_MAX_ROWS="0")
        await bench.stack.wait_ready()
        await measure(bench, key, tenants[0], queries, query_vectors, rounds, "ANN forced")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--subjects", type=int, default=210)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(run(args.rows, args.subjects, args.rounds))


if __name__ == "__main__":
    main()
