"""Promotion end to end on LongMemEval-S (public, MIT; ../shared/data/longmemeval), through the real stack.

Per question, one subject: its answer sessions plus a seeded sample of its other sessions are appended as
session turns (one Cairn session per haystack session, in date order), each session is promoted through
the gateway (Temporal workflow, offline compiler, memory service), and the question is recalled against
that subject's promoted memories only. The same sessions' raw turns, written as long-term memories of a
second subject (`"<role>: <content>"`, cut to the 16 KiB text limit), are the baseline, recalled through
Cairn and, in the same run, ranked by BM25 (`longmemeval.BM25`, the retrieval bench's baseline).

Only question types whose answer is stated in a user turn are used: `single-session-user` and
`knowledge-update` (for the latter the newest value is the answer). The others are left out because the
answer is not text of a user turn: `single-session-assistant` (the assistant said it; promotion keeps
only what the user stated or confirmed), `single-session-preference` (the answer is a rubric),
`multi-session` and `temporal-reasoning` (counts, sums and date arithmetic over several turns). Within them,
a question answered yes or no ("Did I finish reading 'The Nightingale'?" "Yes") is left out too: no turn
states "yes", and any turn that says the word would count as the answer found.

Metrics per question, top 10 recalled memories: `verbatim` (the answer text, lower-cased, whitespace
normalised, appears in one memory as whole words: "5" is not found in "15" nor "four" in "fourteen") and `covered` (every content word of the answer appears, stemmed, in
one memory: promotion rewrites "my closet" as "the user's closet", which `verbatim` counts as a miss).

    python bench/longmemeval_promotion.py [--questions 28] [--others 4] [--data PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import random
import re
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from longmemeval import BM25
from temporalio.client import Client

from cairn_promotion.text import content_tokens
from cairn_promotion.workflows import PromoteSession
from cairn_servicekit.health import connect_temporal
from harness import Bench, gather_limited, running_stack

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "longmemeval" / "longmemeval_s_dev.json.gz"
TYPES = ("single-session-user", "knowledge-update")
YES_OR_NO = re.compile(r"^\W*(?:yes|no)\b", re.IGNORECASE)
TEXT_MAX_BYTES = 16 * 1024
SESSION_MAX_BYTES = 100 * 1024
TOP = 10
SPACE = re.compile(r"\s+")


def normal(text: str) -> str:
    return SPACE.sub(" ", re.sub(r"[^\w\s:./-]", " ", text.lower())).strip()


def questions_of(data: Path, limit: int) -> list[dict[str, Any]]:
    """The first `limit` questions of the types used whose answer is text a turn can state (not yes or no)."""
    every = json.loads(gzip.open(data).read())
    return [q for q in every if q["question_type"] in TYPES and not YES_OR_NO.match(str(q["answer"]))][:limit]


def found(answer: str, texts: list[str]) -> tuple[bool, bool]:
    want = re.compile(rf"(?<!\w){re.escape(normal(answer))}(?!\w)")
    tokens = content_tokens(answer)
    verbatim = any(want.search(normal(t)) for t in texts)
    covered = bool(tokens) and any(tokens <= content_tokens(t) for t in texts)
    return verbatim, covered or verbatim


def cut(text: str, limit: int) -> str:
    raw = text.encode("utf-8")
    return text if len(raw) <= limit else raw[:limit].decode("utf-8", errors="ignore")


def sessions_of(question: dict[str, Any], others: int) -> list[tuple[str, list[dict[str, str]]]]:
    """The answer sessions and a seeded sample of the others, in haystack (date) order."""
    answers = set(question["answer_session_ids"])
    ids = question["haystack_session_ids"]
    rest = [i for i in ids if i not in answers]
    keep = answers | set(random.Random(question["question_id"]).sample(rest, min(others, len(rest))))
    return [
        (sid, [t for t in session if t["content"].strip()])
        for sid, session in zip(ids, question["haystack_sessions"], strict=True)
        if sid in keep
    ]


async def promote_question(
    bench: Bench, temporal: Client, key: str, sessions: list[tuple[str, list[dict[str, str]]]]
) -> dict[str, int]:
    totals: dict[str, int] = defaultdict(int)
    for sid, turns in sessions:
        for turn in turns:
            r = await bench.http.post(
                "/api/v1/memory",
                headers=bench.auth(key),
                json={
                    "tier": "session",
                    "session_id": sid[:200],
                    "role": turn["role"],
                    "content": cut(turn["content"], SESSION_MAX_BYTES),
                    "ttl_seconds": 24 * 3600,
                },
            )
            r.raise_for_status()
        # Sessions are promoted in order, one after another, so a later value supersedes an earlier one.
        r = await bench.http.post(
            "/api/v1/memory/promote", headers=bench.auth(key), json={"session_id": sid[:200]}
        )
        r.raise_for_status()
        accepted = r.json()["data"]
        if accepted["status"] == "started" or accepted["status"] == "running":
            result = await temporal.get_workflow_handle_for(
                PromoteSession.run, accepted["workflow_id"]
            ).result()
            totals["promoted"] += result.promoted
            totals["superseded"] += result.superseded
            totals["sessions"] += 1
    return totals


async def write_raw(bench: Bench, key: str, sessions: list[tuple[str, list[dict[str, str]]]]) -> list[str]:
    """The sessions' turns written as long-term memories; returns their texts."""

    async def write(text: str) -> None:
        r = await bench.http.post("/api/v1/memory", headers=bench.auth(key), json={"text": text})
        r.raise_for_status()

    texts = [cut(f"{t['role']}: {t['content']}", TEXT_MAX_BYTES) for _, turns in sessions for t in turns]
    await gather_limited(8, [write(t) for t in texts])
    return texts


async def top_texts(bench: Bench, key: str, question: str, source: str) -> list[str]:
    r = await bench.http.post(
        "/api/v1/memory/recall", headers=bench.auth(key), json={"query": question[:500], "limit": TOP}
    )
    r.raise_for_status()
    return [h["memory"]["text"] for h in r.json()["data"] if h["memory"]["source"] == source][:TOP]


async def wait_embedded(bench: Bench, keys: list[str]) -> None:
    for key in keys:
        while True:
            r = await bench.http.get("/api/v1/memory", headers=bench.auth(key), params={"limit": 100})
            r.raise_for_status()
            if all(m["embedding_status"] == "ready" for m in r.json()["data"]):
                break
            await asyncio.sleep(2)


async def run(limit: int, others: int, data: Path = DATA) -> None:
    questions = questions_of(data, limit)
    async with running_stack() as bench:
        tenant = await bench.tenant(
            promotion_budget_per_hour=100_000,
            memory_quota=100_000,
            rate_limit_per_second=100_000,
            rate_limit_burst=100_000,
        )
        temporal = await connect_temporal(
            bench.stack.temporal_address,
            bench.stack.temporal_namespace,
            bench.stack.secrets.payload_keys,
        )
        rows: dict[str, list[dict[str, bool]]] = defaultdict(list)
        start = time.perf_counter()
        promoted_total = raw_total = sessions_total = 0
        for q in questions:
            sessions = sessions_of(q, others)
            promo_key = await bench.agent_key(tenant, f"promo-{q['question_id']}")
            raw_key = await bench.agent_key(tenant, f"raw-{q['question_id']}")
            totals = await promote_question(bench, temporal, promo_key, sessions)
            raw_texts = await write_raw(bench, raw_key, sessions)
            raw_total += len(raw_texts)
            await wait_embedded(bench, [promo_key, raw_key])
            promoted = await top_texts(bench, promo_key, q["question"], "promoted")
            raw = await top_texts(bench, raw_key, q["question"], "explicit")
            p_verbatim, p_covered = found(str(q["answer"]), promoted)
            r_verbatim, r_covered = found(str(q["answer"]), raw)
            bm25 = [raw_texts[i] for i in BM25(raw_texts).top(q["question"], TOP)]
            b_verbatim, b_covered = found(str(q["answer"]), bm25)
            listed = await bench.http.get(
                "/api/v1/memory", headers=bench.auth(promo_key), params={"source": "promoted", "limit": 100}
            )
            promoted_total += len(listed.json()["data"])
            sessions_total += totals["sessions"]
            row = {
                "promoted_verbatim": p_verbatim,
                "promoted_covered": p_covered,
                "raw_verbatim": r_verbatim,
                "raw_covered": r_covered,
                "bm25_verbatim": b_verbatim,
                "bm25_covered": b_covered,
            }
            for group in ("all", q["question_type"]):
                rows[group].append(row)
        elapsed = time.perf_counter() - start
    print(
        f"{len(questions)} questions, {sessions_total} sessions promoted in {elapsed:.0f} s: "
        f"{promoted_total} live promoted memories (listing capped at 100 per subject) vs {raw_total} raw "
        "turns written as memories"
    )
    print(f"share of questions whose answer is in the top {TOP} (verbatim / all answer words in one memory):")
    print(f"{'type':<22} {'n':>3}  {'promoted':>17}  {'raw turns':>17}  {'raw turns, BM25':>17}")
    for group, group_rows in rows.items():

        def share(metric: str, r: list[dict[str, bool]] = group_rows) -> float:
            return sum(x[metric] for x in r) / len(r)

        print(
            f"{group:<22} {len(group_rows):>3}  {share('promoted_verbatim'):>7.2f} / {share('promoted_covered'):>5.2f}  "
            f"{share('raw_verbatim'):>7.2f} / {share('raw_covered'):>5.2f}  "
            f"{share('bm25_verbatim'):>7.2f} / {share('bm25_covered'):>5.2f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--questions", type=int, default=28, help="at most this many questions")
    parser.add_argument("--others", type=int, default=4, help="non-answer sessions sampled per question")
    parser.add_argument(
        "--data",
        type=Path,
        default=DATA,
        help="LongMemEval-S file (default: ../shared next to the repository)",
    )
    args = parser.parse_args()
    asyncio.run(run(args.questions, args.others, args.data))


if __name__ == "__main__":
    main()
