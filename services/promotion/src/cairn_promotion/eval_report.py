"""The promotion eval's report: the figures over scored sessions, their session-bootstrap intervals,
paired differences between two compilers, and the text the CLI prints.
"""

import json
import random
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from cairn_promotion.eval_data import SPLITS
from cairn_promotion.eval_match import MATCH_JACCARD, SessionResult

# Session bootstrap: resamples and seed of the 95% intervals (fixed, so a report is reproducible).
BOOTSTRAP_RESAMPLES = 2_000
BOOTSTRAP_SEED = 15


@dataclass(frozen=True)
class EvalReport:
    """Eval numbers over a set of sessions; precision, recall and F1 are micro-averaged."""

    threshold: float
    sessions: list[SessionResult]
    decision: str = "rules"
    matcher: str = "strict"

    @property
    def true_positives(self) -> int:
        return sum(len(s.matches) for s in self.sessions)

    @property
    def predicted_count(self) -> int:
        return sum(len(s.predicted) for s in self.sessions)

    @property
    def expected_count(self) -> int:
        return sum(s.expected_count for s in self.sessions)

    @property
    def precision(self) -> float:
        return self._share_of_survivors(self.true_positives)

    def _share_of_survivors(self, right: int) -> float:
        # No predictions at all is vacuously precise; recall then carries the bad news.
        return right / self.predicted_count if self.predicted_count else 1.0

    @property
    def label_parts(self) -> int:
        """Unmatched survivors a label states in part (`eval_match.label_parts`; entailed verdicts only)."""
        return sum(len(s.parts) for s in self.sessions)

    @property
    def precision_parts(self) -> float:
        """Precision that also counts a survivor a label states in part as right: a memory finer than a
        bundled label is a right fact, which the one-to-one matcher counts against precision."""
        return self._share_of_survivors(self.true_positives + self.label_parts)

    @property
    def recall(self) -> float:
        return self.true_positives / self.expected_count if self.expected_count else 1.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0

    @property
    def leaks(self) -> int:
        return sum(s.leaks for s in self.sessions)

    @property
    def injection_false_positives(self) -> int:
        """Candidates that survived the gate on sessions labelled as prompt injection."""
        return sum(len(s.predicted) for s in self.sessions if s.kind == "injection")

    @property
    def empty_rate(self) -> float:
        """The share of sessions with nothing durable that promote nothing (1.0 when there are none)."""
        empty = [s for s in self.sessions if s.expected_count == 0]
        return sum(not s.predicted for s in empty) / len(empty) if empty else 1.0

    @property
    def updates(self) -> tuple[int, int]:
        """(labelled updates whose survivor carries the replaced memory's slot, labelled updates)."""
        return sum(s.updates_slotted for s in self.sessions), sum(s.updates for s in self.sessions)

    @property
    def unjudged(self) -> int:
        """Survivor-label pairs the strict matcher rejected that no judge has seen (`--judged` only)."""
        return sum(len(s.unjudged) for s in self.sessions)

    @property
    def unjudged_parts(self) -> int:
        """Pairs that could make a part of a label that no annotator has seen (`--judged` only)."""
        return sum(len(s.unjudged_parts) for s in self.sessions)

    @property
    def judged(self) -> bool:
        """Whether annotators' verdicts were used (then the parts of labels are counted too)."""
        return self.matcher != "strict"

    def subset(self, split: str) -> "EvalReport":
        """The same report restricted to one dataset split."""
        return self._with([s for s in self.sessions if s.split == split])

    def _with(self, sessions: list[SessionResult]) -> "EvalReport":
        return EvalReport(self.threshold, sessions, self.decision, self.matcher)

    def kinds(self) -> list[str]:
        return list(dict.fromkeys(s.kind for s in self.sessions))

    def of_kind(self, kind: str) -> "EvalReport":
        return self._with([s for s in self.sessions if s.kind == kind])

    def summary(self) -> dict[str, Any]:
        """The JSON shape `task eval -- --json` prints per split."""
        slotted, total = self.updates
        return {
            "precision": round(self.precision, 3),
            "recall": round(self.recall, 3),
            "f1": round(self.f1, 3),
            "leaks": self.leaks,
            "empty_rate": round(self.empty_rate, 3),
            "by_kind": {
                kind: {
                    "precision": round(part.precision, 3),
                    "recall": round(part.recall, 3),
                    **({"precision_parts": round(part.precision_parts, 3)} if self.judged else {}),
                }
                for kind in sorted(self.kinds())
                for part in [self.of_kind(kind)]
            },
            "sessions": len(self.sessions),
            "expected": self.expected_count,
            "predicted": self.predicted_count,
            "updates": {"slotted": slotted, "total": total},
            "threshold": self.threshold,
            "decision": self.decision,
            "matcher": self.matcher,
            **(
                {
                    "unjudged": self.unjudged,
                    "precision_parts": round(self.precision_parts, 3),
                    "label_parts": self.label_parts,
                    "unjudged_parts": self.unjudged_parts,
                }
                if self.judged
                else {}
            ),
            "ci95": self.intervals(),
        }

    def intervals(
        self, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED
    ) -> dict[str, list[float]]:
        """95% percentile intervals of precision, recall and F1 over sessions drawn with replacement.

        The session is the unit drawn, not the fact: facts of one session share its style and speaker,
        so drawing facts alone would make the intervals too narrow. With ~100 sessions a split's
        interval is several points wide; a change smaller than that is not shown by one split."""
        if not self.sessions:
            return {"precision": [1.0, 1.0], "recall": [1.0, 1.0], "f1": [0.0, 0.0]}
        draws = _draws(len(self.sessions), resamples, seed)
        return {
            name: [round(float(v), 3) for v in np.percentile(values, [2.5, 97.5])]
            for name, values in _resampled(self, draws).items()
        }


def paired_differences(
    candidate: EvalReport,
    baseline: EvalReport,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> dict[str, dict[str, float | list[float]]]:
    """Candidate minus baseline in precision, recall and F1 on the same sessions, with a paired 95%
    interval: each resample draws sessions once and scores both on them, so what the two share (the
    sessions' difficulty) cancels and the interval measures the change alone. An interval that holds 0
    means these sessions do not show the change."""
    if [s.id for s in candidate.sessions] != [s.id for s in baseline.sessions]:
        raise ValueError("a paired comparison needs both reports over the same sessions, in order")
    draws = _draws(len(candidate.sessions), resamples, seed)
    metrics = [_resampled(report, draws) for report in (candidate, baseline)]
    return {
        name: {
            "difference": round(getattr(candidate, name) - getattr(baseline, name), 3),
            "ci95": [
                round(float(v), 3) for v in np.percentile(metrics[0][name] - metrics[1][name], [2.5, 97.5])
            ],
        }
        for name in ("precision", "recall", "f1")
    }


def _draws(sessions: int, resamples: int, seed: int) -> npt.NDArray[np.int64]:
    """`resamples` rows of `sessions` session indexes drawn with replacement (seeded: reproducible)."""
    return np.random.default_rng(seed).integers(0, max(1, sessions), (resamples, sessions))


def _resampled(report: EvalReport, draws: npt.NDArray[np.int64]) -> dict[str, npt.NDArray[np.float64]]:
    """Precision, recall and F1 of `report` on each row of session indexes in `draws`, with the point
    estimates' conventions: nothing predicted is precise, nothing expected is recalled."""
    counts = np.array(
        [(len(s.matches), len(s.predicted), s.expected_count, len(s.parts)) for s in report.sessions],
        dtype=np.float64,
    ).reshape(-1, 4)
    tp, predicted, expected, parts = (counts[draws, column].sum(axis=1) for column in range(4))
    precision = np.divide(tp, predicted, out=np.ones_like(tp), where=predicted > 0)
    recall = np.divide(tp, expected, out=np.ones_like(tp), where=expected > 0)
    total = precision + recall
    f1 = np.divide(2 * precision * recall, total, out=np.zeros_like(tp), where=total > 0)
    figures = {"precision": precision, "recall": recall, "f1": f1}
    if report.judged:
        right = tp + parts
        figures["precision_parts"] = np.divide(right, predicted, out=np.ones_like(tp), where=predicted > 0)
    return figures


def render(report: EvalReport, verbose: bool = False) -> str:
    """The human-readable report printed by the CLI."""
    lines: list[str] = []
    if verbose:
        for s in report.sessions:
            lines.append(
                f"{s.id:<28} {s.kind:<12} {s.split:<5} tp={len(s.matches)} pred={len(s.predicted)} "
                f"exp={s.expected_count}"
            )
            lines.extend(f"    = {m.predicted!r}  ~ {m.expected!r} ({m.similarity:.2f})" for m in s.matches)
            lines.extend(
                f"    {'*' if c in s.parts else '+'} {c.text!r} ({c.confidence:.2f})"
                for c in s.false_positives
            )
            lines.extend(f"    - {e!r}" for e in s.missed)
        lines.append("")
    lines.append(
        f"decision={report.decision} threshold={report.threshold:.2f} match_jaccard={MATCH_JACCARD:.2f} "
        f"matcher={report.matcher}"
        + (
            f" unjudged_pairs={report.unjudged} unjudged_part_pairs={report.unjudged_parts}"
            if report.judged
            else ""
        )
    )
    for split in _splits(report):
        part = report.subset(split)
        slotted, total = part.updates
        lines.append(
            f"{split:<5} sessions={len(part.sessions):<3} precision={part.precision:.3f} "
            f"recall={part.recall:.3f} f1={part.f1:.3f} leaks={part.leaks} empty_rate={part.empty_rate:.3f} "
            f"updates={slotted}/{total}"
            + (
                f" precision_parts={part.precision_parts:.3f} label_parts={part.label_parts}"
                if part.judged
                else ""
            )
        )
        ci = part.intervals()
        lines.append(
            "      95% CI, sessions resampled: "
            + " ".join(f"{name}=[{low:.3f}, {high:.3f}]" for name, (low, high) in ci.items())
        )
        for kind in sorted(part.kinds()):
            k = part.of_kind(kind)
            lines.append(
                f"      {kind:<13} sessions={len(k.sessions):<3} exp={k.expected_count:<3} "
                f"pred={k.predicted_count:<3} precision={k.precision:.3f} recall={k.recall:.3f}"
                + (f" precision_parts={k.precision_parts:.3f}" if k.judged else "")
            )
    return "\n".join(lines)


def write_unjudged(report: EvalReport, path: Path, parts: bool = False) -> None:
    """The pairs no judge has seen as the judge reads them: shuffled, without session, split or kind;
    with `parts`, the pairs that could make a part of a label (`entailed_pairs.json`'s question)."""
    pairs = sorted({pair for s in report.sessions for pair in (s.unjudged_parts if parts else s.unjudged)})
    random.Random(len(pairs)).shuffle(pairs)
    items = [{"pair": f"u{n:03d}", "memory": m, "fact": f} for n, (m, f) in enumerate(pairs)]
    path.write_text(json.dumps(items, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def _splits(report: EvalReport) -> list[str]:
    found = list(dict.fromkeys(s.split for s in report.sessions))
    return [s for s in SPLITS if s in found] + [s for s in found if s not in SPLITS]


def render_differences(split: str, differences: Mapping[str, Mapping[str, Any]]) -> str:
    """One line per split: candidate minus baseline, with the paired interval."""
    parts = [
        f"{name}={d['difference']:+.3f} [{d['ci95'][0]:+.3f}, {d['ci95'][1]:+.3f}]"
        for name, d in differences.items()
    ]
    return f"{split:<5} minus baseline, paired 95% CI: " + " ".join(parts)
