"""Recall quality on LongMemEval-S (public, MIT; ../shared/data/longmemeval), through the real stack.

Each question is one user's history: its ~490 turns become long-term memories of one subject (text
`"[<session date>] <role>: <content>"`, cut to the 16 KiB text limit), written through the gateway and
embedded by the worker. The question is then recalled in Cairn's three modes, next to an in-harness Okapi
BM25 (k1 1.5, b 0.75, lower-cased word tokens, no stemming or stop words) over the same turns. Gold
evidence is the turns with `has_answer: true`.

Metrics per question: turn recall@5/10/20 (share of gold turns in the top k), hit@10 (any gold turn in the
top 10) and session hit@10 (a top-10 turn from an answer session); averaged overall, per `question_type`
and per split. The split is fixed by a hash of the question id: `tune` (ranking knobs are chosen on it) and
`held-out` (only ever reported).

    python bench/longmemeval.py                         # all 99 questions, fresh stack
    python bench/longmemeval.py --keep /tmp/lme         # keep the ingested stack; a rerun resumes/skips ingest
    python bench/longmemeval.py --keep /tmp/lme --variant CAIRN_RRF_K=20 --variant CAIRN_RRF_K=100

The large-subject path (own indexes; keyword and vector sides from per-replica copies, or in SQL with the
copies off) on the same questions, each subject made "large" by a low threshold:

    python bench/longmemeval.py --keep /tmp/lme --variant CAIRN_SUBJECT_INDEX_MIN_ROWS=100 \
        --variant CAIRN_SUBJECT_INDEX_MIN_ROWS=100,CAIRN_SUBJECT_KEYWORD_COPY_MAX_POSTINGS=0,CAIRN_SUBJECT_COPY_MAX_ROWS=0
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import hashlib
import json
import math
import re
import time
import uuid
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import asyncpg
import httpx

from harness import Bench, gather_limited, running_stack

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "longmemeval" / "longmemeval_s_dev.json.gz"
TEXT_MAX_BYTES = 16 * 1024
MODES = ("hybrid", "semantic", "keyword")
TENANT = "longmemeval"
KS = (5, 10, 20)
WORD = re.compile(r"\w+", re.UNICODE)


def split_of(question_id: str) -> str:
    return "tune" if int(hashlib.sha256(question_id.encode()).hexdigest(), 16) % 2 == 0 else "held-out"


def memory_text(date: str, role: str, content: str) -> str:
    text = f"[{date}] {role}: {content}"
    raw = text.encode("utf-8")
    if len(raw) <= TEXT_MAX_BYTES:
        return text
    return raw[:TEXT_MAX_BYTES].decode("utf-8", errors="ignore")


def turns_of(question: dict[str, Any]) -> list[dict[str, Any]]:
    """Every turn of the question's haystack, with its text, session id and gold flag."""
    out = []
    for session_id, date, session in zip(
        question["haystack_session_ids"],
        question["haystack_dates"],
        question["haystack_sessions"],
        strict=True,
    ):
        for index, turn in enumerate(session):
            if not turn["content"].strip():
                continue
            out.append(
                {
                    "ref": f"{session_id}#{index}",
                    "session": session_id,
                    "gold": bool(turn.get("has_answer")),
                    "text": memory_text(date, turn["role"], turn["content"]),
                }
            )
    return out


class BM25:
    """Okapi BM25 over one subject's turns: the obvious baseline any ranking must beat."""

    def __init__(self, docs: list[str], k1: float = 1.5, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self.tf = [Counter(WORD.findall(d.lower())) for d in docs]
        self.len = [sum(c.values()) for c in self.tf]
        self.avg = sum(self.len) / max(1, len(self.len))
        df: Counter[str] = Counter()
        for counts in self.tf:
            df.update(counts.keys())
        n = len(docs)
        self.idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}

    def top(self, query: str, k: int) -> list[int]:
        terms = set(WORD.findall(query.lower()))
        scores = []
        for i, counts in enumerate(self.tf):
            s = 0.0
            for t in terms:
                f = counts.get(t)
                if f:
                    s += (
                        self.idf[t]
                        * f
                        * (self.k1 + 1)
                        / (f + self.k1 * (1 - self.b + self.b * self.len[i] / self.avg))
                    )
            if s > 0:
                scores.append((s, i))
        scores.sort(key=lambda x: (-x[0], x[1]))
        return [i for _, i in scores[:k]]


def score(ranked: list[str], turns: dict[str, dict[str, Any]], answer_sessions: set[str]) -> dict[str, float]:
    gold = {ref for ref, t in turns.items() if t["gold"]}
    out = {f"R@{k}": len(set(ranked[:k]) & gold) / len(gold) for k in KS}
    out["hit@10"] = float(bool(set(ranked[:10]) & gold))
    out["sess@10"] = float(any(turns[r]["session"] in answer_sessions for r in ranked[:10]))
    return out


async def benchmark_tenant(bench: Bench, conn: asyncpg.Connection) -> str:
    """The kept stack's benchmark tenant, created on first use with its rate limit and quota lifted
    through the admin API (ingest must not be throttled by the tenant's own write bucket)."""
    found = await conn.fetchval("SELECT id FROM tenants WHERE name = $1", TENANT)
    if found is not None:
        return str(found)
    r = await bench.http.post("/api/v1/tenants", json={"name": TENANT}, headers=bench.auth(bench.admin_key))
    r.raise_for_status()
    tenant: str = r.json()["data"]["id"]
    limits = {
        "memory_quota": 100_000,
        "rate_limit_per_second": 100_000,
        "rate_limit_burst": 100_000,
        "read_rate_limit_per_second": 100_000,
        "read_rate_limit_burst": 1_000_000,
    }
    patched = await bench.http.patch(
        f"/api/v1/tenants/{tenant}", json=limits, headers=bench.auth(bench.admin_key)
    )
    patched.raise_for_status()
    return tenant


async def ingest(bench: Bench, questions: list[dict[str, Any]], wait: bool) -> dict[str, Any]:
    """Write every question's turns as memories of its own subject and wait until all are embedded.

    Resumable: a question's memories already in the (kept) stack are found by their text, and only the
    missing turns are written; keys are minted anew for the same agent ids, so they share the subject."""
    conn = await asyncpg.connect(bench.stack.database_url)
    try:
        tenant = await benchmark_tenant(bench, conn)
        loaded: dict[str, Any] = {"tenant": tenant, "questions": {}}
        start = time.perf_counter()
        written = 0
        for question in questions:
            agent_id = f"lme-{question['question_id']}"
            key = await bench.agent_key(tenant, agent_id)
            rows = await conn.fetch(
                "SELECT id, text FROM memories WHERE tenant_id = $1 AND subject_id = $2",
                uuid.UUID(tenant),
                agent_id,
            )
            by_text: dict[str, list[str]] = defaultdict(list)
            for r in rows:
                by_text[r["text"]].append(str(r["id"]))
            ids: dict[str, str] = {}
            missing = []
            for turn in turns_of(question):
                if by_text.get(turn["text"]):
                    ids[by_text[turn["text"]].pop()] = turn["ref"]
                else:
                    missing.append(turn)
            # Rows an interrupted ingest wrote twice: the corpus must be exactly the haystack.
            for extra in (mid for left in by_text.values() for mid in left):
                deleted = await bench.http.delete(f"/api/v1/memory/{extra}", headers=bench.auth(key))
                deleted.raise_for_status()

            async def write(turn: dict[str, Any], key: str = key) -> tuple[str, str]:
                r = await bench.http.post(
                    "/api/v1/memory", headers=bench.auth(key), json={"text": turn["text"]}
                )
                r.raise_for_status()
                return str(r.json()["data"]["id"]), str(turn["ref"])

            for mid, ref in await gather_limited(16, [write(t) for t in missing]):
                ids[mid] = ref
            written += len(missing)
            loaded["questions"][question["question_id"]] = {"key": key, "ids": ids}
        print(f"wrote {written} memories through the gateway in {time.perf_counter() - start:.0f} s")
        while wait and (
            pending := await conn.fetchval(
                "SELECT count(*) FROM memories WHERE tenant_id = $1 AND embedding_content_hash IS NULL",
                uuid.UUID(tenant),
            )
        ):
            print(f"  waiting for embeddings: {pending} pending", flush=True)
            await asyncio.sleep(15)
        chunks = await conn.fetchval(
            "SELECT count(*) FROM memory_chunks WHERE tenant_id = $1", uuid.UUID(tenant)
        )
        memories = await conn.fetchval(
            "SELECT count(*) FROM memories WHERE tenant_id = $1", uuid.UUID(tenant)
        )
    finally:
        await conn.close()
    print(f"{memories} memories with {chunks} extra chunk vectors, {time.perf_counter() - start:.0f} s")
    return loaded


Rows = dict[str, list[dict[str, float]]]  # group -> per-question scores


async def evaluate(
    bench: Bench, questions: list[dict[str, Any]], loaded: dict[str, Any], modes: tuple[str, ...]
) -> tuple[dict[str, Rows], dict[str, list[float]]]:
    results: dict[str, Rows] = {m: defaultdict(list) for m in modes}
    latency: dict[str, list[float]] = defaultdict(list)
    for question in questions:
        entry = loaded["questions"][question["question_id"]]
        turns = {t["ref"]: t for t in turns_of(question)}
        answer_sessions = set(question["answer_session_ids"])
        groups = ("all", question["question_type"], split_of(question["question_id"]))
        for mode in modes:
            if mode == "bm25":
                refs = list(turns)
                index = BM25([turns[r]["text"] for r in refs])
                ranked = [refs[i] for i in index.top(question["question"], max(KS))]
            else:
                start = time.perf_counter()
                r = await bench.http.post(
                    "/api/v1/memory/recall",
                    headers=bench.auth(entry["key"]),
                    json={"query": question["question"][:500], "limit": max(KS), "mode": mode},
                )
                latency[mode].append(time.perf_counter() - start)
                r.raise_for_status()
                ranked = [entry["ids"][h["memory"]["id"]] for h in r.json()["data"]]
            s = score(ranked, turns, answer_sessions)
            for g in groups:
                results[mode][g].append(s)
    return results, latency


async def warm_large_subjects(
    bench: Bench, questions: list[dict[str, Any]], loaded: dict[str, Any], timeout: float = 120.0
) -> list[str]:
    """With a subject-index threshold below a question's turns (`--variant CAIRN_SUBJECT_INDEX_MIN_ROWS=100`),
    every question's subject is a large one: recall each until its own indexes (and, unless turned off, its
    copies) serve it, so the evaluation measures the large-subject path. The strategy each settled on."""
    settled = []
    for question in questions:
        key = loaded["questions"][question["question_id"]]["key"]
        deadline = time.perf_counter() + timeout
        strategy = ""
        while time.perf_counter() < deadline:
            r = await bench.http.post(
                "/api/v1/memory/recall", headers=bench.auth(key), json={"query": question["question"][:500]}
            )
            r.raise_for_status()
            strategy = r.json()["meta"]["strategy"]
            if strategy == "subject_exact":
                break
            if strategy == "subject_ann":  # copies turned off, or still loading: give them a moment
                await asyncio.sleep(0.5)
                again = await bench.http.post(
                    "/api/v1/memory/recall",
                    headers=bench.auth(key),
                    json={"query": question["question"][:500]},
                )
                strategy = again.json()["meta"]["strategy"]
                break
            await asyncio.sleep(0.5)
        settled.append(strategy)
    await asyncio.sleep(1.0)  # the last postings loads
    return settled


async def keyword_sides(bench: Bench) -> dict[str, float]:
    """The recall process's `cairn_recall_keyword_sides_total` by source (copy, sql)."""
    async with httpx.AsyncClient(base_url=bench.stack.http_url("recall"), timeout=10) as client:
        text = (await client.get("/metrics")).text
    sides = {}
    for line in text.splitlines():
        if line.startswith("cairn_recall_keyword_sides_total{"):
            sides[line.split('source="', 1)[1].split('"', 1)[0]] = float(line.rsplit(" ", 1)[1])
    return sides


def mean(rows: list[dict[str, float]], metric: str) -> float:
    return sum(r[metric] for r in rows) / len(rows)


def show(title: str, results: dict[str, Rows]) -> None:
    metrics = ["R@5", "R@10", "R@20", "hit@10", "sess@10"]
    first = next(iter(results.values()))
    groups = ["all", "tune", "held-out"] + sorted(g for g in first if g not in ("all", "tune", "held-out"))
    print(f"\n## {title}")
    for group in groups:
        print(f"\n{group} (n={len(first[group])})")
        print(f"{'mode':10s}" + "".join(f"{m:>9s}" for m in metrics))
        for mode, rows in results.items():
            print(f"{mode:10s}" + "".join(f"{mean(rows[group], m):9.3f}" for m in metrics))


async def run(
    limit: int | None, keep: Path | None, variants: list[dict[str, str]], modes: tuple[str, ...]
) -> None:
    questions: list[dict[str, Any]] = json.load(gzip.open(DATA))[:limit]
    async with running_stack(keep_dir=keep) as bench:
        loaded = await ingest(bench, questions, wait=any(m in ("hybrid", "semantic") for m in modes))
        results, latency = await evaluate(bench, questions, loaded, ("bm25", *modes))
        show(f"LongMemEval-S dev, {len(questions)} questions, default settings", results)
        for mode, values in latency.items():
            values.sort()
            print(f"recall latency {mode}: p50 {values[len(values) // 2] * 1000:.1f} ms")
        for env in variants:
            await bench.stack.supervisor.stop("recall")
            await bench.stack.start_service("recall", "cairn_recall", **env)
            await bench.stack.wait_ready()
            if "CAIRN_SUBJECT_INDEX_MIN_ROWS" in env:
                strategies = await warm_large_subjects(bench, questions, loaded)
                print(f"\nlarge-subject path, semantic sides served by: {dict(Counter(strategies))}")
            before = await keyword_sides(bench)
            results, _ = await evaluate(bench, questions, loaded, modes)
            after = await keyword_sides(bench)
            show(f"with {env}", results)
            print(
                "keyword sides of large subjects by source:", {k: after[k] - before.get(k, 0) for k in after}
            )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--questions", type=int, default=None, help="only the first N questions")
    parser.add_argument(
        "--keep", type=Path, default=None, help="data dir to keep (and reuse) the ingested stack"
    )
    parser.add_argument("--variant", action="append", default=[], help="recall settings, e.g. CAIRN_RRF_K=20")
    parser.add_argument("--modes", default=",".join(MODES), help="Cairn modes to run (BM25 always runs)")
    args = parser.parse_args()
    variants = [dict(pair.split("=", 1) for pair in v.split(",")) for v in args.variant]
    asyncio.run(run(args.questions, args.keep, variants, tuple(args.modes.split(","))))


if __name__ == "__main__":
    main()
