"""Retrieval quality through the real stack: recall@k of keyword-only, semantic-only and hybrid recall on the
hand-labelled set in bench/data/retrieval_eval_v1.json (8 subjects, 523 memories, 393 queries).

Each eval subject becomes a Cairn agent; its memories are written through the gateway and embedded by the
worker; every query is recalled in all three modes. Prints recall@1/@3/@10 and MRR per mode and query kind.

    python bench/retrieval_eval.py
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import asyncpg

from harness import Bench, running_stack

DATA = Path(__file__).parent / "data" / "retrieval_eval_v1.json"
MODES = ("keyword", "semantic", "hybrid")
KS = (1, 3, 10)


def scores(ranked: list[str], relevant: set[str]) -> dict[str, float]:
    out = {f"R@{k}": len(set(ranked[:k]) & relevant) / len(relevant) for k in KS}
    first = next((i for i, m in enumerate(ranked) if m in relevant), None)
    out["MRR"] = 0.0 if first is None else 1.0 / (first + 1)
    return out


Report = dict[str, dict[str, dict[str, float]]]


async def load(bench: Bench, dataset: dict[str, Any]) -> list[tuple[str, dict[str, Any], dict[str, str]]]:
    """Write every subject's memories through the gateway and wait until all are embedded."""
    tenant = await bench.tenant()
    loaded = []
    for subject in dataset["subjects"]:
        key = await bench.agent_key(tenant, subject["subject"])
        ids: dict[str, str] = {}
        for memory in subject["memories"]:
            r = await bench.http.post(
                "/api/v1/memory", headers=bench.auth(key), json={"text": memory["text"]}
            )
            r.raise_for_status()
            ids[r.json()["data"]["id"]] = memory["id"]
        loaded.append((key, subject, ids))
    conn = await asyncpg.connect(bench.stack.database_url)
    try:
        while await conn.fetchval("SELECT count(*) FROM memories WHERE embedding_content_hash IS NULL"):
            await asyncio.sleep(0.2)
    finally:
        await conn.close()
    return loaded


async def evaluate(
    bench: Bench, loaded: list[tuple[str, dict[str, Any], dict[str, str]]], modes: tuple[str, ...]
) -> Report:
    totals: dict[str, dict[str, list[dict[str, float]]]] = defaultdict(lambda: defaultdict(list))
    for key, subject, ids in loaded:
        for query in subject["queries"]:
            for mode in modes:
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
    return {
        mode: {
            kind: {metric: sum(r[metric] for r in rows) / len(rows) for metric in rows[0]}
            for kind, rows in totals[mode].items()
        }
        for mode in modes
    }


def show(title: str, report: Report) -> None:
    kinds = ["all", "paraphrase", "exact", "mixed"]
    print(f"\n## {title}")
    for metric in ("R@10", "R@3", "R@1", "MRR"):
        print(f"{metric:5s}    " + " ".join(f"{k:>11s}" for k in kinds))
        for mode, row in report.items():
            print(f"{mode:9s}" + " ".join(f"{row[k][metric]:11.3f}" for k in kinds))


async def run(variants: list[dict[str, str]]) -> None:
    dataset = json.loads(DATA.read_text())
    async with running_stack() as bench:
        loaded = await load(bench, dataset)
        show("default settings", await evaluate(bench, loaded, MODES))
        for env in variants:
            await bench.stack.supervisor.stop("recall")
            await bench.stack.start_service("recall", "cairn_recall", **env)
            await bench.stack.wait_ready()
            show(f"hybrid with {env}", await evaluate(bench, loaded, ("hybrid",)))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--variant",
        action="append",
        default=[],
        help="recall settings to compare, e.g. --variant CAIRN_KEYWORD_MATCH=any,CAIRN_RRF_KEYWORD_WEIGHT=0.5",
    )
    args = parser.parse_args()
    variants = [dict(pair.split("=", 1) for pair in v.split(",")) for v in args.variant]
    asyncio.run(run(variants))


if __name__ == "__main__":
    main()
