"""The offline half of `longmemeval_promotion.py`: no stack, about a minute on one core.

For the same questions (the first `--questions` of `single-session-user` and `knowledge-update` in
LongMemEval-S), each answer session is compiled by the offline compiler with the learned decision and
gated as the workflow gates it (confidence >= 0.6, at most 20 per session); a question counts when its
answer is `covered` (the bench's metric) by one survivor. This is the ceiling promotion sets before recall
ranks anything, and it moves with the bench's promoted figure, so a compiler or classifier change can be
checked against sessions nobody here wrote before it ships. It caught a feature that raised the eval's
test split while lowering this figure from 0.68 to 0.57 (`services/promotion/eval/README.md`).

    python bench/longmemeval_promotion_offline.py [--questions 28] [--artifact PATH] [--data PATH]

`--pool START:END OUT` writes instead the survivors of every LongMemEval-S haystack session in a fixed seeded
order, from START to END, one per line (`session id`, confidence, memory), for reading what promotion keeps of
conversations nobody here wrote. Sessions 0:400 are where the rules after the decision were read (thirty-third
session of `services/promotion/eval/README.md`); 400:700 are held out for blind judging, never read.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
from collections import defaultdict
from pathlib import Path

from longmemeval_promotion import DATA, found, questions_of

from cairn_contracts.promotion import Candidate, Turn
from cairn_embeddings import LocalOnnxEmbedder
from cairn_promotion.compiler import DEFAULT_CONFIDENCE_THRESHOLD, DEFAULT_MAX_CANDIDATES, apply_gate
from cairn_promotion.learned import ARTIFACT, DurableModel, LearnedDecision
from cairn_promotion.offline import OfflineCompiler

POOL_SEED = 54


def _compiler(artifact: Path) -> OfflineCompiler:
    embedder = LocalOnnxEmbedder.load(threads=1)
    return OfflineCompiler(LearnedDecision(DurableModel.load(artifact), embedder.embed_array))


def _survivors(compiler: OfflineCompiler, session: list[dict[str, str]]) -> list[Candidate]:
    turns = [Turn(role=t["role"], content=t["content"]) for t in session if t["content"].strip()]
    return apply_gate(compiler.extract(turns), DEFAULT_CONFIDENCE_THRESHOLD, DEFAULT_MAX_CANDIDATES)


def pool(span: str, out: Path, artifact: Path, data: Path) -> None:
    start, end = (int(bound) for bound in span.split(":"))
    sessions: dict[str, list[dict[str, str]]] = {}
    for q in json.loads(gzip.open(data).read()):
        for sid, session in zip(q["haystack_session_ids"], q["haystack_sessions"], strict=True):
            sessions.setdefault(sid, session)
    order = sorted(sessions)
    random.Random(POOL_SEED).shuffle(order)
    compiler = _compiler(artifact)
    written = 0
    with out.open("w", encoding="utf-8") as sink:
        for sid in order[start:end]:
            for kept in _survivors(compiler, sessions[sid]):
                sink.write(f"{sid}\t{kept.confidence:.2f}\t{kept.text}\n")
                written += 1
    print(f"sessions={len(order[start:end])} of {len(order)} survivors={written} -> {out}")


def run(limit: int, artifact: Path, data: Path) -> None:
    compiler = _compiler(artifact)
    questions = questions_of(data, limit)
    rows: dict[str, list[bool]] = defaultdict(list)
    survivors = 0
    for q in questions:
        answers = set(q["answer_session_ids"])
        texts: list[str] = []
        for sid, session in zip(q["haystack_session_ids"], q["haystack_sessions"], strict=True):
            if sid not in answers:
                continue
            kept = _survivors(compiler, session)
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
    parser.add_argument(
        "--pool", nargs=2, metavar=("START:END", "OUT"), help="write a span of sessions' survivors"
    )
    args = parser.parse_args()
    if args.pool:
        pool(args.pool[0], Path(args.pool[1]), args.artifact, args.data)
    else:
        run(args.questions, args.artifact, args.data)


if __name__ == "__main__":
    main()
