"""Retrieval quality through the real stack: recall@k of keyword-only, semantic-only and hybrid recall on the
hand-labelled set in bench/data/retrieval_eval_v1.json (8 subjects, 523 memories, 393 queries).

Each eval subject becomes a Cairn agent; its memories are written through the gateway and embedded by the
worker; every query is recalled in all three modes. Prints recall@1/@3/@10 and MRR per mode and query kind.

    python bench/retrieval_eval.py
"""

from __future__ import annotations

import asyncio
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import asyncpg

from harness import running_stack

DATA = Path(__file__).parent / "data" / "retrieval_eval_v1.json"
MODES = ("keyword", "semantic", "hybrid")
KS = (1, 3, 10)


def scores(ranked: list[str], relevant: set[str]) -> dict[str, float]:
    out = {f"R@{k}": len(set(ranked[:k]) & relevant) / len(relevant) for k in KS}
    first = next((i for i, m in enumerate(ranked) if m in relevant), None)
    out["MRR"] = 0.0 if first is None else 1.0 / (first + 1)
    return out


async def run() -> dict[str, dict[str, dict[str, float]]]:
    dataset = json.loads(DATA.read_text())
    totals: dict[str, dict[str, list[dict[str, float]]]] = defaultdict(lambda: defaultdict(list))
    async with running_stack() as bench:
        tenant = await bench.tenant()
        for subject in dataset["subjects"]:
            key = await bench.agent_key(tenant, subject["subject"])
            ids: dict[str, str] = {}
            for memory in subject["memories"]:
                r = await bench.http.post(
                    "/api/v1/memory", headers=bench.auth(key), json={"text": memory["text"]}
                )
                r.raise_for_status()
                ids[r.json()["data"]["id"]] = memory["id"]
            conn = await asyncpg.connect(bench.stack.database_url)
            try:
                while await conn.fetchval(
                    "SELECT count(*) FROM memories WHERE embedding_content_hash IS NULL"
                ):
                    await asyncio.sleep(0.2)
            finally:
                await conn.close()
            for query in subject["queries"]:
                for mode in MODES:
                    r = await bench.http.post(
                        "/api/v1/memory/recall",
                        headers=bench.auth(key),
                        json={"query": query["query"], "limit": 10, "mode": mode},
                    )
                    r.raise_for_status()
                    ranked = [ids[h["memory"]["id"]] for h in r.json()["data"]]
                    result = scores(ranked, set(query["relevant"]))
                    totals[mode][query["kind"]].append(result)
                    totals[mode]["all"].append(result)
    report: dict[str, dict[str, dict[str, float]]] = {}
    for mode in MODES:
        report[mode] = {
            kind: {metric: sum(r[metric] for r in rows) / len(rows) for metric in rows[0]}
            for kind, rows in totals[mode].items()
        }
    return report


def main() -> None:
    report = asyncio.run(run())
    kinds = ["all", "paraphrase", "exact", "mixed"]
    for metric in ("R@10", "R@3", "R@1", "MRR"):
        print(f"\n{metric:5s} " + " ".join(f"{k:>11s}" for k in kinds))
        for mode in MODES:
            row: dict[str, Any] = report[mode]
            print(f"{mode:9s}" + " ".join(f"{row[k][metric]:11.3f}" for k in kinds))


if __name__ == "__main__":
    main()
