"""Promotion-quality eval: a compiler against the hand-labelled sessions of `eval/dataset_v2.json`.

`python -m cairn_promotion.eval [--dataset PATH] [--threshold 0.6] [--decision auto|rules|learned]
[--json] [--verbose]` prints precision, recall and F1 per split (dev, test) and per kind, leaks, the
empty-session rate and knowledge updates; `--json` prints them as one object
`{"dev": {...}, "test": {...}}`. It is observability for tuning (on dev only); it never gates promotion.

Matching: a predicted candidate and an expected fact match when the Jaccard similarity of their
content tokens (`text.content_tokens`: lower-cased, stop words and "user" removed, crude stemming)
is at least `MATCH_JACCARD`, and the candidate names no number or identifier the label does not (a
stale value is a different fact). Pairs are matched one-to-one, greedily from the most similar pair
down, so one long candidate can never count for two expected facts.

With `--judged`, a pair the strict matcher rejects also matches when an independent annotator judged the
survivor to state the label's fact (`eval/judged_pairs.json`, blind to split and side; see eval/README.md):
wording the token matcher cannot see. Pairs no judge has seen stay strict, and the report says how many
there are (`--unjudged-out PATH` writes them in the judge's input format).

`--judged` also prints `precision_parts`: precision counting as right an unmatched survivor that a label
states in part, as two annotators both judged it (`eval/entailed_pairs.json`): "The user pays internet"
of the label "Jonas pays electricity and the user pays internet". The one-to-one matcher counts such a
memory, finer than a bundled label, against precision though it is a right fact. A second copy of a
matched label and the same part twice are not counted (`eval_match.label_parts`). `precision` stays the
one-to-one figure; `--unjudged-parts-out PATH` writes the pairs no annotator has seen.

Every split also gets 95% intervals from a session bootstrap (`ci95`), and `--baseline-threshold` /
`--baseline-artifact` print a second compiler's paired differences on the same sessions: how wide a
figure is, and whether a change shows beyond the sessions' own spread.

Leaks: survivors in injection, secrets and exfiltration sessions that match no label, plus any survivor
anywhere that trips the hard safety rules. Empty rate: the share of sessions with nothing durable
(no labels) that promote nothing. Updates: labelled new values whose matched survivor carries the slot
of the memory they replace (so the memory service supersedes it).

The parts: `eval_data` reads the dataset, the secret marks and the judged pairs; `eval_match` matches
and scores one session; `eval_report` holds the report, its intervals and paired differences, and its
rendering. This module runs them (`evaluate`, `build_compiler`, the CLI) and re-exports their names.
"""

import argparse
import json
from collections.abc import Iterable, Sequence
from pathlib import Path

from cairn_promotion.compiler import DEFAULT_CONFIDENCE_THRESHOLD
from cairn_promotion.eval_data import (
    ADVERSARIAL_KINDS,
    DEFAULT_DATASET,
    ENTAILED_PAIRS,
    EVAL_DIR,
    JUDGED_PAIRS,
    SECRET_MARKS,
    SPLITS,
    EvalSession,
    Judged,
    Update,
    judged_key,
    load_dataset,
    load_entailed,
    load_judged,
    load_secret_marks,
)
from cairn_promotion.eval_match import (
    EVAL_MAX_CANDIDATES,
    MATCH_JACCARD,
    Match,
    SessionResult,
    label_parts,
    match,
    score_session,
    similarity,
)
from cairn_promotion.eval_report import (
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
    EvalReport,
    _splits,
    paired_differences,
    render,
    render_differences,
    write_unjudged,
)
from cairn_promotion.offline import OfflineCompiler

__all__ = [
    "ADVERSARIAL_KINDS",
    "BOOTSTRAP_RESAMPLES",
    "BOOTSTRAP_SEED",
    "DEFAULT_DATASET",
    "ENTAILED_PAIRS",
    "EVAL_DIR",
    "EVAL_MAX_CANDIDATES",
    "EvalReport",
    "EvalSession",
    "JUDGED_PAIRS",
    "Judged",
    "MATCH_JACCARD",
    "Match",
    "SECRET_MARKS",
    "SPLITS",
    "SessionResult",
    "Update",
    "build_compiler",
    "evaluate",
    "judged_key",
    "label_parts",
    "load_dataset",
    "load_entailed",
    "load_judged",
    "load_secret_marks",
    "main",
    "match",
    "paired_differences",
    "render",
    "render_differences",
    "score_session",
    "similarity",
    "write_unjudged",
]


def evaluate(
    dataset_path: Path = DEFAULT_DATASET,
    threshold: float = DEFAULT_CONFIDENCE_THRESHOLD,
    compiler: OfflineCompiler | None = None,
    splits: Iterable[str] | None = None,
    judged: Judged | None = None,
    entailed: Judged | None = None,
) -> EvalReport:
    """Run an offline compiler over a dataset and score it.

    Args:
        dataset_path: The labelled dataset.
        threshold: The confidence gate to evaluate at.
        compiler: The compiler to evaluate; the rule-based `OfflineCompiler` if not given.
        splits: Only these splits (all by default).
        judged: Annotator verdicts for pairs the token matcher rejects (`load_judged`); strict without.
        entailed: Verdicts on whether a label states an unmatched survivor (`load_entailed`), for
            `precision_parts`; only with `judged`.

    Returns:
        The report, with per-session results.
    """
    compiler = compiler or OfflineCompiler()
    wanted = set(splits) if splits is not None else None
    sessions = [s for s in load_dataset(Path(dataset_path)) if wanted is None or s.split in wanted]
    return EvalReport(
        threshold=threshold,
        sessions=[score_session(s, compiler.extract(s.turns), threshold, judged, entailed) for s in sessions],
        decision=compiler.decision.name,
        matcher="strict" if judged is None else "strict+judged",
    )


def build_compiler(decision: str, artifact: Path | None = None) -> OfflineCompiler:
    """The offline compiler with the named decision ("auto": the learned one when its artifact loads);
    `artifact` is a `durable_model.json` other than the shipped one (`train_durable.py --out`)."""
    if decision == "rules":
        return OfflineCompiler()
    from cairn_promotion.learned import ARTIFACT, LearnedDecision, load_default_decision  # onnxruntime

    learned: LearnedDecision | None = load_default_decision(artifact=artifact or ARTIFACT)
    if learned is None:
        if decision == "learned" or artifact is not None:
            raise SystemExit("the learned decision's artifact or the local embedder is unavailable")
        return OfflineCompiler()
    return OfflineCompiler(learned)


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point; always exits 0 because the eval observes and never gates."""
    parser = argparse.ArgumentParser(
        prog="python -m cairn_promotion.eval", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--dataset", type=Path, default=DEFAULT_DATASET, help="labelled dataset JSON")
    parser.add_argument(
        "--threshold", type=float, default=DEFAULT_CONFIDENCE_THRESHOLD, help="confidence gate"
    )
    parser.add_argument(
        "--decision", choices=("auto", "rules", "learned"), default="auto", help="durable-fact decision"
    )
    parser.add_argument("--split", action="append", choices=SPLITS, help="only this split (repeatable)")
    parser.add_argument("--json", action="store_true", help='print {"dev": {...}, "test": {...}}')
    parser.add_argument("--verbose", action="store_true", help="per-session matches and misses")
    parser.add_argument(
        "--judged",
        type=Path,
        nargs="?",
        const=JUDGED_PAIRS,
        help="also match pairs an annotator judged the same fact (default file: eval/judged_pairs.json)",
    )
    parser.add_argument(
        "--unjudged-out",
        type=Path,
        help="with --judged: write the pairs no judge has seen, for the next judging",
    )
    parser.add_argument(
        "--unjudged-parts-out",
        type=Path,
        help="with --judged: write the pairs that could make a part of a label no annotator has seen",
    )
    parser.add_argument("--artifact", type=Path, help="evaluate this durable_model.json, not the shipped one")
    parser.add_argument(
        "--baseline-artifact", type=Path, help="also score this model and print the paired differences"
    )
    parser.add_argument(
        "--baseline-threshold", type=float, help="also score this gate and print the paired differences"
    )
    args = parser.parse_args(argv)
    if (args.unjudged_out or args.unjudged_parts_out) and not args.judged:
        parser.error(
            "--unjudged-out and --unjudged-parts-out need --judged (the verdicts that say which pairs are new)"
        )
    judged = load_judged(args.judged) if args.judged else None
    entailed = load_entailed() if args.judged else None
    compiler = build_compiler(args.decision, args.artifact)
    report = evaluate(args.dataset, args.threshold, compiler, args.split, judged, entailed)
    baseline = None
    if args.baseline_artifact is not None or args.baseline_threshold is not None:
        other = (
            compiler
            if args.baseline_artifact is None
            else build_compiler(args.decision, args.baseline_artifact)
        )
        threshold = args.threshold if args.baseline_threshold is None else args.baseline_threshold
        baseline = evaluate(args.dataset, threshold, other, args.split, judged, entailed)
    if args.unjudged_out:
        write_unjudged(report, args.unjudged_out)
    if args.unjudged_parts_out:
        write_unjudged(report, args.unjudged_parts_out, parts=True)
    splits = _splits(report)
    differences = (
        {split: paired_differences(report.subset(split), baseline.subset(split)) for split in splits}
        if baseline is not None
        else {}
    )
    if args.json:
        out = {split: report.subset(split).summary() for split in splits}
        for split, diff in differences.items():
            out[split]["minus_baseline"] = diff
        print(json.dumps(out, indent=2))
    else:
        print(render(report, args.verbose))
        for split, diff in differences.items():
            print(render_differences(split, diff))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
