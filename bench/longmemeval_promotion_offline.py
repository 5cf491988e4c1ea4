"""The offline half of `longmemeval_promotion.py`: no stack, about a minute on one core.

For the same questions (the first `--questions` of `single-session-user` and `knowledge-update` in
LongMemEval-S), each answer session is compiled by the offline compiler with the learned decision and
gated as the workflow gates it (confidence >= 0.6, at most 20 per session); a question counts when its
answer is `covered` (the bench's metric) by one survivor. This is the ceiling promotion sets before recall
ranks anything, and it moves with the bench's promoted figure, so a compiler or classifier change can be
checked against sessions nobody here wrote before it ships. It caught a feature that raised the eval's
test split while lowering this figure from 0.68 to 0.57 (`services/promotion/eval/README.md`).

    python bench/longmemeval_promotion_offline.py [--questions 28] [--artifact PATH] [--data PATH]
"""

from __future__ import annotations

import argparse
import gzip
import json
from collections import defaultdict
from pathlib import Path

from longmemeval_promotion import DATA, TYPES, found

from cairn_contracts.promotion import Turn
from cairn_embeddings import LocalOnnxEmbedder
from cairn_promotion.compiler import DEFAULT_CONFIDENCE_THRESHOLD, DEFAULT_MAX_CANDIDATES, apply_gate
from cairn_promotion.learned import ARTIFACT, DurableModel, LearnedDecision
from cairn_promotion.offline import OfflineCompiler


def run(limit: int, artifact: Path, data: Path) -> None:
    embedder = LocalOnnxEmbedder.load(threads=1)
    compiler = OfflineCompiler(LearnedDecision(DurableModel.load(artifact), embedder.embed_array))
    questions = [q for q in json.loads(gzip.open(data).read()) if q["question_type"] in TYPES][:limit]
    rows: dict[str, list[bool]] = defaultdict(list)
    survivors = 0
    for q in questions:
        answers = set(q["answer_session_ids"])
        texts: list[str] = []
        for sid, session in zip(q["haystack_session_ids"], q["haystack_sessions"], strict=True):
            if sid not in answers:
                continue
            turns = [Turn(role=t["role"], content=t["content"]) for t in session if t["content"].strip()]
            kept = apply_gate(compiler.extract(turns), DEFAULT_CONFIDENCE_THRESHOLD, DEFAULT_MAX_CANDIDATES)
            survivors += len(kept)
            texts.extend(c.text for c in kept)
        rows[q["question_type"]].append(found(str(q["answer"]), texts)[1])
    everything = [hit for hits in rows.values() for hit in hits]
    print(f"artifact={artifact} questions={len(everything)} survivors={survivors}")
    print(f"  all                  answer in the gate's survivors: {sum(everything) / len(everything):.2f}")
    for kind, hits in sorted(rows.items()):
        print(f"  {kind:<20} n={len(hits):<3} answer in the gate's survivors: {sum(hits) / len(hits):.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--questions", type=int, default=28)
    parser.add_argument("--artifact", type=Path, default=ARTIFACT, help="a durable_model.json to check")
    parser.add_argument("--data", type=Path, default=DATA)
    args = parser.parse_args()
    run(args.questions, args.artifact, args.data)


if __name__ == "__main__":
    main()
