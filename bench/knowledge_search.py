"""Knowledge search and merged recall through the real stack: latency at 10k articles + 10k memories, and
search quality (recall@5) of hybrid vs keyword vs semantic on a labelled article set.

One tenant holds 10,000 filler articles (bulk COPY; the HNSW indexes are rebuilt after) and one agent
subject with 10,000 memories (bulk COPY). The 40 labelled articles of bench/data/knowledge_eval_v1.json are
then proposed through the gateway, i.e. through the novelty gate, into the same tenant. For the 48 labelled
queries it measures:

- p50/p95 of `POST /api/v1/knowledge/search` and of `POST /api/v1/recall` (merged recall) through the
  gateway, query embedding included, one request at a time;
- recall@5 of knowledge search per mode (`hybrid`, `keyword`, `semantic`), overall and per query kind.

Filler vectors are real MiniLM embeddings of 2,000 distinct templated articles (and 2,000 distinct memory
texts), each reused five times with a different reference number and a little Gaussian jitter, so rows are
distinct but keep the model's geometry.

    python bench/knowledge_search.py [--articles 10000] [--memories 10000] [--rounds 2] [--env CAIRN_X=v]
        [--variant CAIRN_KNOWLEDGE_HNSW_EF_SEARCH=400 ...]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import random
import re
import statistics
import time
import uuid
from pathlib import Path
from typing import Any

import asyncpg
import numpy as np
from pgvector.asyncpg import register_vector

from cairn_contracts.identity import Role
from cairn_embeddings import EmbeddingSettings, LocalOnnxEmbedder
from cairn_knowledge.search_store import SearchStore
from cairn_knowledge.settings import KnowledgeSettings
from cairn_scope import Scope
from cairn_storage import create_engine, make_sessionmaker
from cairn_storage.explain import Explain
from harness import Bench, running_stack, summary_ms, wait_subject_indexes

DATA = Path(__file__).parent / "data" / "knowledge_eval_v1.json"
TEAMS = [
    "payments",
    "platform",
    "mobile",
    "data",
    "search",
    "growth",
    "identity",
    "billing",
    "infra",
    "support",
]
TOPICS = [
    "quarterly planning",
    "vendor contract",
    "office move",
    "hackathon",
    "offsite agenda",
    "team budget",
    "hardware order",
    "conference talk",
    "customer interview",
    "roadmap review",
    "training course",
    "parking permits",
    "holiday party",
    "desk booking",
    "coffee machine",
    "team charter",
]
THINGS = ["spreadsheet", "proposal", "checklist", "invoice", "survey", "shortlist", "timeline", "draft"]
PLACES = ["Rotterdam", "Lisbon", "Porto", "Ghent", "Utrecht", "Krakow", "Tallinn", "Bilbao"]
PEOPLE = ["Anouk", "Bram", "Carmen", "Daan", "Elif", "Finn", "Greta", "Hugo", "Ines", "Joris"]
MONTHS = ["January", "March", "May", "July", "September", "November"]


def filler_article(rng: random.Random, n: int) -> tuple[str, str, str]:
    team, topic = rng.choice(TEAMS), rng.choice(TOPICS)
    title = f"{team.title()} {topic} note {n}"
    body = (
        f"The {team} team's {rng.choice(THINGS)} for the {topic} in {rng.choice(PLACES)} was updated in "
        f"{rng.choice(MONTHS)}; {rng.choice(PEOPLE)} owns it and {rng.choice(PEOPLE)} reviews it."
    )
    return title, body, topic.split()[0]


def filler_memory(rng: random.Random, n: int) -> str:
    return (
        f"{rng.choice(PEOPLE)} asked me to follow up on the {rng.choice(TOPICS)} {rng.choice(THINGS)} "
        f"with the {rng.choice(TEAMS)} team before {rng.choice(MONTHS)} (memo {n})"
    )


def jittered(base: np.ndarray, rng: np.random.Generator, copies: int) -> np.ndarray:
    vectors = np.repeat(base, copies, axis=0) + rng.normal(
        scale=0.01, size=(len(base) * copies, base.shape[1])
    )
    normed: np.ndarray = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    return normed.astype(np.float32)


async def bulk_load(
    bench: Bench, tenant_id: str, subject: str, articles: int, memories: int, embedder: LocalOnnxEmbedder
) -> None:
    rng = random.Random(7)
    nrng = np.random.default_rng(7)
    copies = 5
    distinct = [filler_article(rng, n) for n in range(articles // copies)]
    start = time.perf_counter()
    base = embedder.embed_array([f"{t}\n\n{b}" for t, b, _ in distinct]).astype(np.float64)
    memory_texts = [filler_memory(rng, n) for n in range(memories // copies)]
    memory_base = embedder.embed_array(memory_texts).astype(np.float64)
    print(
        f"embedded {len(distinct)} + {len(memory_texts)} distinct filler texts in {time.perf_counter() - start:.1f} s"
    )
    vectors = jittered(base, nrng, copies)
    memory_vectors = jittered(memory_base, nrng, copies)
    tenant = uuid.UUID(tenant_id)
    conn = await asyncpg.connect(bench.stack.database_url)
    await register_vector(conn)
    try:
        await conn.execute("DROP INDEX IF EXISTS articles_embedding_hnsw_idx")
        await conn.execute("DROP INDEX IF EXISTS memories_live_embedding_hnsw_idx")
        start = time.perf_counter()
        records: list[tuple[Any, ...]] = []
        for i in range(len(distinct) * copies):
            title, body, category = distinct[i // copies]
            title, body = f"{title}.{i % copies}", f"{body} (ref {i})"
            digest = hashlib.sha256(body.encode()).hexdigest()
            records.append(
                (
                    uuid.uuid4(),
                    tenant,
                    title,
                    body,
                    category,
                    [],
                    "published",
                    "tenant",
                    "filler",
                    "agent",
                    digest,
                    vectors[i],
                    hashlib.sha256(f"{title}\n\n{body}".encode()).hexdigest(),
                    "bench",
                )
            )
        await conn.copy_records_to_table(
            "articles",
            records=records,
            columns=[
                "id",
                "tenant_id",
                "title",
                "body",
                "category",
                "tags",
                "status",
                "visibility",
                "proposer_subject_id",
                "source",
                "content_hash",
                "embedding",
                "embedding_content_hash",
                "embedding_model",
            ],
        )
        memory_records = [
            (
                uuid.uuid4(),
                tenant,
                subject,
                f"{memory_texts[i // copies]} #{i}",
                memory_vectors[i],
                "bulk",
                "bench",
            )
            for i in range(len(memory_texts) * copies)
        ]
        await conn.copy_records_to_table(
            "memories",
            records=memory_records,
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
        print(
            f"bulk COPY of {len(records)} articles + {len(memory_records)} memories: {time.perf_counter() - start:.1f} s"
        )
        start = time.perf_counter()
        await conn.execute("SET maintenance_work_mem = '1GB'")
        await conn.execute(
            "CREATE INDEX articles_embedding_hnsw_idx ON articles USING hnsw (embedding vector_cosine_ops) "
            "WITH (m = 16, ef_construction = 64)"
        )
        await conn.execute(
            "CREATE INDEX memories_live_embedding_hnsw_idx ON memories USING hnsw (embedding vector_cosine_ops) "
            "WITH (m = 16, ef_construction = 64) WHERE superseded_by IS NULL"
        )
        print(f"HNSW index builds: {time.perf_counter() - start:.1f} s")
        # The steady state a served table is in (as bench/recall_scale.py): otherwise autovacuum of the
        # freshly copied rows runs during the measurements, and first reads set every row's hint bits.
        await conn.execute("VACUUM (ANALYZE) articles")
        await conn.execute("VACUUM (ANALYZE) memories")
    finally:
        await conn.close()


async def timed_post(bench: Bench, key: str, path: str, body: dict[str, Any]) -> tuple[float, dict[str, Any]]:
    start = time.perf_counter()
    response = await bench.http.post(path, json=body, headers=bench.auth(key))
    elapsed = time.perf_counter() - start
    response.raise_for_status()
    result: dict[str, Any] = response.json()
    return elapsed, result


async def main(articles: int, memories: int, rounds: int, env: dict[str, str], variants: list[str]) -> None:
    dataset = json.loads(DATA.read_text())
    embedder = LocalOnnxEmbedder.load(cache_dir=EmbeddingSettings().model_cache_dir)
    if env:
        print(f"service settings: {env}")
    async with running_stack(env) as bench:
        tenant_id = await bench.tenant(memory_quota=1_000_000)
        key = await bench.agent_key(tenant_id, "bench")
        await bulk_load(bench, tenant_id, "bench", articles, memories, embedder)
        waited = await wait_subject_indexes(bench, key, dataset["queries"][0]["query"])
        print(f"memory subject: its own indexes serve it after {waited:.1f} s")

        ids: dict[str, str] = {}
        verdicts: dict[str, int] = {}
        gate_times = []
        for article in dataset["articles"]:
            body = {"title": article["title"], "body": article["body"], "category": article["category"]}
            elapsed, result = await timed_post(bench, key, "/api/v1/knowledge", body)
            gate_times.append(elapsed)
            verdict = result["data"]["verdict"]
            verdicts[verdict] = verdicts.get(verdict, 0) + 1
            ids[result["data"]["article"]["id"]] = article["id"]
        print(f"proposed {len(dataset['articles'])} labelled articles through the gate: {verdicts}")
        print(f"  propose (gate, embedding included): {summary_ms(gate_times)}")

        await measure(
            bench, key, dataset, ids, rounds, f"{articles} + 40 articles, {memories} memories", "defaults"
        )
        vector = embedder.embed_array([dataset["queries"][0]["query"]])[0].tolist()
        pool = KnowledgeSettings.model_fields["knowledge_candidate_pool"].default
        print("plan of knowledge search's semantic statement (EXPLAIN ANALYZE):")
        print(await semantic_plan(bench, tenant_id, "bench", vector, pool))
        for variant in variants:
            # Restart only the knowledge service with this setting: both runs share one stack and load.
            name, value = variant.split("=", 1)
            await bench.stack.supervisor.stop("knowledge")
            await bench.stack.start_service("knowledge", "cairn_knowledge", **{**env, name: value})
            await bench.stack.wait_ready(timeout=120)
            await measure(bench, key, dataset, ids, rounds, "same corpus", variant)


async def semantic_plan(bench: Bench, tenant_id: str, subject: str, vector: list[float], limit: int) -> str:
    """EXPLAIN ANALYZE of knowledge search's semantic statement exactly as the service builds it."""
    engine = create_engine(bench.stack.database_url, pool_size=1)
    scope = Scope(tenant_id=tenant_id, subject_id=subject, role=Role.agent, key_id="bench")
    try:
        async with make_sessionmaker(engine).begin() as session:
            stmt = SearchStore(session).semantic_statement(scope, vector, limit, None, ann=False, pool=limit)
            lines = [r[0] for r in await session.execute(Explain(stmt, "ANALYZE, COSTS OFF, TIMING OFF"))]
            return "\n".join(re.sub(r"'\[[^']*\]'::vector", "$query_vector", line) for line in lines)
    finally:
        await engine.dispose()


async def measure(
    bench: Bench, key: str, dataset: dict[str, Any], ids: dict[str, str], rounds: int, corpus: str, label: str
) -> None:
    print(f"--- knowledge service settings: {label}")
    queries = dataset["queries"]
    for q in queries[:5]:  # warm-up: caches, connections, plans
        await timed_post(bench, key, "/api/v1/knowledge/search", {"query": q["query"], "limit": 5})
        await timed_post(bench, key, "/api/v1/recall", {"query": q["query"], "limit": 5})
    search_times: list[float] = []
    recall_times: list[float] = []
    memory_times: list[float] = []
    strategies: set[str] = set()
    degraded = 0
    for _ in range(rounds):
        for q in queries:
            elapsed, result = await timed_post(
                bench, key, "/api/v1/knowledge/search", {"query": q["query"], "limit": 5}
            )
            search_times.append(elapsed)
            strategies.add(result["meta"]["strategy"])
            elapsed, merged = await timed_post(
                bench, key, "/api/v1/recall", {"query": q["query"], "limit": 5}
            )
            recall_times.append(elapsed)
            degraded += bool(merged["meta"]["degraded"])
            elapsed, _ = await timed_post(
                bench, key, "/api/v1/memory/recall", {"query": q["query"], "limit": 5}
            )
            memory_times.append(elapsed)
    print(f"corpus: {corpus}")
    print(f"knowledge search (hybrid, limit 5; strategy {sorted(strategies)}): {summary_ms(search_times)}")
    print(f"merged recall (limit 5; {degraded} degraded): {summary_ms(recall_times)}")
    print(f"  for comparison, memory recall alone (limit 5): {summary_ms(memory_times)}")

    print("knowledge search quality, recall@5 (mean over queries):")
    for mode in ("hybrid", "keyword", "semantic"):
        per_kind: dict[str, list[float]] = {}
        times: list[float] = []
        for q in queries:
            elapsed, result = await timed_post(
                bench, key, "/api/v1/knowledge/search", {"query": q["query"], "limit": 5, "mode": mode}
            )
            top = {ids.get(h["id"]) for h in result["data"]}
            times.append(elapsed)
            hit = len(top & set(q["relevant"])) / len(q["relevant"])
            per_kind.setdefault(q["kind"], []).append(hit)
        everything = [v for values in per_kind.values() for v in values]
        kinds = ", ".join(f"{k} {statistics.mean(v):.3f} (n={len(v)})" for k, v in sorted(per_kind.items()))
        print(f"  {mode:8s} {statistics.mean(everything):.3f}  [{kinds}]  latency {summary_ms(times)}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--articles", type=int, default=10_000)
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--env", action="append", default=[], help="a service setting, e.g. CAIRN_X=1")
    parser.add_argument(
        "--variant",
        action="append",
        default=[],
        help="re-measure with the knowledge service restarted with CAIRN_X=v",
    )
    args = parser.parse_args()
    overrides = dict(item.split("=", 1) for item in args.env)
    asyncio.run(main(args.articles, args.memories, args.rounds, overrides, args.variant))
