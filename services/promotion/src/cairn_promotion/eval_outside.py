"""Promotion quality on the labelled sets by other writers: one line per set, strict and judged.

`cairn_promotion.eval` scores one dataset; a compiler change is judged on all the sets the learned
decision was never trained on, written by people other than the ones who tuned it (see the eval README,
"Sessions by other writers" and the twentieth session). This prints them together, so a change is read
against outside data in one command, with a paired 95% interval when a baseline is given:

    ./task eval:outside
    ./task eval:outside -- --artifact /tmp/m.json --baseline-artifact <shipped durable_model.json>

A change's effect session by session: `--survivors before.json` on the old code, then `--diff before.json` on the
new prints every session whose survivors changed; `--failures` prints every session's false positives and missed
labels. A test half's sessions are never printed (only its figures), nor heldout's writer C, scored and never read
since the tenth session: failures are read on the dev halves and the other outside sessions alone.
"""

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cairn_promotion.compiler import DEFAULT_CONFIDENCE_THRESHOLD
from cairn_promotion.eval import (
    DEFAULT_DATASET,
    EvalReport,
    Judged,
    build_compiler,
    evaluate,
    load_dataset,
    load_entailed,
    load_judged,
    paired_differences,
    score_session,
)
from cairn_promotion.offline import OfflineCompiler

EVAL_DIR = DEFAULT_DATASET.parent
# name -> (file in eval/, the splits scored; None = every split). instyle_v14's test half is never read.
OUTSIDE_SETS: dict[str, tuple[str, list[str] | None]] = {
    "heldout": ("heldout_v5.json", None),
    **{f"v{n}": (f"train_extra_v{n}.json", None) for n in range(6, 14)},
    "instyle-dev": ("instyle_v14.json", ["dev"]),
    "instyle-test": ("instyle_v14.json", ["test"]),
}
# Sets scored but never read: `--diff` and `--failures` print none of their sessions.
NEVER_READ = frozenset({"instyle-test"})
# Sessions of a read set that are scored but never read, by id prefix: heldout's writer C (eval README).
NEVER_READ_SESSIONS = {"heldout": ("hoC-",)}


def is_never_read(name: str, session_id: str) -> bool:
    """Whether a set's session is scored only: a test half's, or a writer's kept unread."""
    return name in NEVER_READ or session_id.startswith(NEVER_READ_SESSIONS.get(name, ()))


# set -> session id -> the survivors' texts, as `--survivors` writes them.
Survivors = dict[str, dict[str, list[str]]]


def both_matchers(
    path: Path,
    splits: list[str] | None,
    compiler: OfflineCompiler,
    judged: Judged,
    entailed: Judged | None = None,
) -> tuple[EvalReport, EvalReport]:
    """One set scored strict and with the verdicts (`entailed` too: the parts of labels), from one compile
    of each session (the costly part)."""
    sessions = [s for s in load_dataset(path) if splits is None or s.split in splits]
    compiled = [(s, compiler.extract(s.turns)) for s in sessions]

    def scored(verdicts: Judged | None) -> EvalReport:
        gate = DEFAULT_CONFIDENCE_THRESHOLD
        return EvalReport(
            threshold=gate,
            sessions=[
                score_session(s, found, gate, verdicts, None if verdicts is None else entailed)
                for s, found in compiled
            ],
            decision=compiler.decision.name,
            matcher="strict" if verdicts is None else "strict+judged",
        )

    return scored(None), scored(judged)


def line(name: str, strict: EvalReport, judged: EvalReport) -> dict[str, Any]:
    """One set's figures: strict and judged precision, recall and F1, survivors, leaks, empty rate."""
    return {
        "set": name,
        "sessions": len(strict.sessions),
        "survivors": strict.predicted_count,
        "facts": strict.expected_count,
        "strict": {k: round(getattr(strict, k), 3) for k in ("precision", "recall", "f1")},
        "judged": {k: round(getattr(judged, k), 3) for k in ("precision", "recall", "f1", "precision_parts")},
        "unjudged_pairs": judged.unjudged,
        "unjudged_part_pairs": judged.unjudged_parts,
        "leaks": strict.leaks,
        "empty_rate": round(strict.empty_rate, 3),
    }


def render_line(row: dict[str, Any]) -> str:
    s, j = row["strict"], row["judged"]
    return (
        f"{row['set']:13} sessions={row['sessions']:<4} survivors={row['survivors']:<4} "
        f"strict P {s['precision']:.3f} R {s['recall']:.3f} F1 {s['f1']:.3f}  "
        f"judged P {j['precision']:.3f} R {j['recall']:.3f} F1 {j['f1']:.3f} P_parts {j['precision_parts']:.3f}  "
        f"leaks={row['leaks']} empty_rate={row['empty_rate']:.3f} unjudged={row['unjudged_pairs']}"
        f"/{row['unjudged_part_pairs']}"
    )


def survivors_of(report: EvalReport) -> dict[str, list[str]]:
    """One set's survivors per session, in the compiler's order."""
    return {session.id: [c.text for c in session.predicted] for session in report.sessions}


def survivor_changes(before: Survivors, after: Survivors) -> list[str]:
    """Lines for every session of a set both hold whose survivors changed ("== set id", "  - old", "  + new"), the
    sessions never read (`is_never_read`) left out."""
    lines: list[str] = []
    for name, sessions in after.items():
        if name not in before:
            continue
        for session_id, now in sessions.items():
            then = before[name].get(session_id, [])
            if then == now or is_never_read(name, session_id):
                continue
            lines.append(f"== {name} {session_id}")
            lines.extend(f"  - {text}" for text in then if text not in now)
            lines.extend(f"  + {text}" for text in now if text not in then)
    return lines


def failures(name: str, report: EvalReport) -> list[str]:
    """Lines for every readable session of a set with a false positive or a missed label ("== set id", "  FP
    survivor", "  PART survivor" for one a label states in part, "  MISS label"), as the judged matcher counts them."""
    lines: list[str] = []
    for session in report.sessions:
        if is_never_read(name, session.id) or not (session.false_positives or session.missed):
            continue
        lines.append(f"== {name} {session.id} [{session.kind}]")
        lines.extend(
            f"  {'PART' if candidate in session.parts else 'FP'} {candidate.text}"
            for candidate in session.false_positives
        )
        lines.extend(f"  MISS {label}" for label in session.missed)
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point; always exits 0: the eval observes, it never gates."""
    parser = argparse.ArgumentParser(
        prog="python -m cairn_promotion.eval_outside", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--sets", nargs="+", choices=list(OUTSIDE_SETS), default=list(OUTSIDE_SETS))
    parser.add_argument("--artifact", type=Path, help="score this durable_model.json, not the shipped one")
    parser.add_argument(
        "--baseline-artifact", type=Path, help="also score this model; print paired differences"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON list, one object per set")
    parser.add_argument("--survivors", type=Path, help="write every session's survivors to this JSON file")
    parser.add_argument(
        "--diff", type=Path, help="print the sessions whose survivors differ from this --survivors file"
    )
    parser.add_argument(
        "--failures",
        action="store_true",
        help="print each readable session's false positives and missed labels",
    )
    args = parser.parse_args(argv)
    judged, entailed = load_judged(), load_entailed()
    compiler = build_compiler("auto", args.artifact)
    baseline = build_compiler("auto", args.baseline_artifact) if args.baseline_artifact else None
    rows = []
    failed: list[str] = []
    survivors: Survivors = {}
    for name in args.sets:
        path, splits = OUTSIDE_SETS[name]
        strict, with_verdicts = both_matchers(EVAL_DIR / path, splits, compiler, judged, entailed)
        survivors[name] = survivors_of(with_verdicts)
        row = line(name, strict, with_verdicts)
        if baseline is not None:
            other = evaluate(
                EVAL_DIR / path, compiler=baseline, splits=splits, judged=judged, entailed=entailed
            )
            row["minus_baseline_judged"] = paired_differences(with_verdicts, other)
        rows.append(row)
        if args.failures:
            failed.extend(failures(name, with_verdicts))
        if not args.json:
            print(render_line(row), flush=True)
            if "minus_baseline_judged" in row:
                diff = row["minus_baseline_judged"]
                print(
                    "              minus baseline (judged, paired 95% CI): "
                    + "  ".join(f"{k} {v['difference']:+.3f} {v['ci95']}" for k, v in diff.items())
                )
    if args.json:
        print(json.dumps(rows, indent=2))
    if args.survivors is not None:
        args.survivors.write_text(
            json.dumps(survivors, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
        )
    if args.diff is not None:
        print("\n".join(survivor_changes(json.loads(args.diff.read_text(encoding="utf-8")), survivors)))
    if args.failures:
        print("\n".join(failed))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
