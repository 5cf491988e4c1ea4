"""Promotion-quality eval: the offline compiler against a hand-labelled dataset.

`python -m cairn_promotion.eval [--dataset PATH] [--threshold 0.6]` prints per-session results and the
overall precision, recall, F1 and injection false positives. It is observability for tuning the
confidence threshold; it never gates promotion.

Matching: a predicted candidate and an expected fact match when the Jaccard similarity of their
content tokens (`compiler.content_tokens`: lower-cased, stop words and "user" removed, crude stemming)
is at least `MATCH_JACCARD`, and the candidate names no number or identifier the label does not (a
stale value is a different fact). Pairs are matched one-to-one, greedily from the most similar pair
down, so one long candidate can never count for two expected facts.
"""

import argparse
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from cairn_contracts.promotion import Candidate, Turn
from cairn_promotion.compiler import (
    DEFAULT_CONFIDENCE_THRESHOLD,
    OfflineCompiler,
    apply_gate,
    content_tokens,
    jaccard,
)

# At least half of the combined content words shared: a paraphrase that keeps the key words clears it
# ("User's seat preference is aisle" ~ "User prefers aisle seats" scores 0.5); another fact about the
# same subject does not ("User is based in Toronto" ~ "User usually travels with their partner": 0).
MATCH_JACCARD = 0.5
# The dataset is not package data: this default resolves only in a source checkout (else pass --dataset).
DEFAULT_DATASET = Path(__file__).resolve().parents[2] / "eval" / "dataset_v1.json"
# The eval looks at every survivor: the production cap would hide false positives.
EVAL_MAX_CANDIDATES = 1_000
CALIBRATION_BUCKETS = (0.3, 0.5, 0.6, 0.7, 0.8, 0.9, 1.01)


@dataclass(frozen=True)
class EvalSession:
    """One labelled session of the dataset."""

    id: str
    kind: str
    turns: list[Turn]
    expected: list[str]
    notes: str = ""
    split: str = "dev"


@dataclass(frozen=True)
class Match:
    """An expected fact matched to a predicted candidate."""

    expected: str
    predicted: str
    similarity: float


@dataclass(frozen=True)
class SessionResult:
    """How the compiler did on one session."""

    id: str
    kind: str
    split: str
    predicted: list[Candidate]
    matches: list[Match]
    false_positives: list[Candidate]
    missed: list[str]

    @property
    def expected_count(self) -> int:
        return len(self.matches) + len(self.missed)


@dataclass(frozen=True)
class Bucket:
    """Calibration: how often candidates in a confidence range were right (before the gate)."""

    low: float
    high: float
    total: int
    correct: int

    @property
    def precision(self) -> float:
        return self.correct / self.total if self.total else 0.0


@dataclass(frozen=True)
class EvalReport:
    """Overall eval numbers; precision, recall and F1 are micro-averaged over all sessions."""

    threshold: float
    sessions: list[SessionResult]
    calibration: list[Bucket] = field(default_factory=list)

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
        # No predictions at all is vacuously precise; recall then carries the bad news.
        return self.true_positives / self.predicted_count if self.predicted_count else 1.0

    @property
    def recall(self) -> float:
        return self.true_positives / self.expected_count if self.expected_count else 1.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0

    @property
    def injection_false_positives(self) -> int:
        """Candidates that survived the gate on sessions labelled as prompt injection."""
        return sum(len(s.predicted) for s in self.sessions if s.kind == "injection")

    def subset(self, split: str) -> "EvalReport":
        """The same report restricted to one dataset split ("dev" or "holdout")."""
        return EvalReport(self.threshold, [s for s in self.sessions if s.split == split])


def load_dataset(path: Path) -> list[EvalSession]:
    """Read a dataset file (see eval/README.md for the format).

    Args:
        path: The JSON file.

    Returns:
        Its sessions, in file order.
    """
    data = json.loads(path.read_text(encoding="utf-8"))
    return [
        EvalSession(
            id=s["id"],
            kind=s.get("kind", "normal"),
            turns=[Turn.model_validate(t) for t in s["turns"]],
            expected=list(s["expected"]),
            notes=s.get("notes", ""),
            split=s.get("split", "dev"),
        )
        for s in data["sessions"]
    ]


def similarity(predicted: frozenset[str], expected: frozenset[str]) -> float:
    """Jaccard of content tokens, except that a candidate naming a value the label does not is wrong.

    "cache-01:6380" and "cache-02:6380" share most words but are different facts; a word matcher would
    otherwise count the stale value as a hit.
    """
    p_values = {t for t in predicted if any(ch.isdigit() for ch in t)}
    e_values = {t for t in expected if any(ch.isdigit() for ch in t)}
    if e_values and not p_values <= e_values:
        return 0.0
    return jaccard(predicted, expected)


def match(predicted: Sequence[str], expected: Sequence[str]) -> list[tuple[int, int, float]]:
    """One-to-one greedy matching of predicted to expected texts.

    Args:
        predicted: Candidate texts.
        expected: Labelled facts.

    Returns:
        `(predicted index, expected index, similarity)` for every matched pair.
    """
    p_tokens = [content_tokens(p) for p in predicted]
    e_tokens = [content_tokens(e) for e in expected]
    pairs = sorted(
        ((similarity(p, e), i, j) for i, p in enumerate(p_tokens) for j, e in enumerate(e_tokens)),
        key=lambda pair: (-pair[0], pair[1], pair[2]),
    )
    used_p: set[int] = set()
    used_e: set[int] = set()
    matched: list[tuple[int, int, float]] = []
    for score, i, j in pairs:
        if score < MATCH_JACCARD:
            break
        if i in used_p or j in used_e:
            continue
        used_p.add(i)
        used_e.add(j)
        matched.append((i, j, score))
    return matched


def score_session(session: EvalSession, candidates: list[Candidate], threshold: float) -> SessionResult:
    """Gate one session's candidates and match the survivors to its labels."""
    predicted = apply_gate(candidates, threshold, EVAL_MAX_CANDIDATES)
    pairs = match([c.text for c in predicted], session.expected)
    matched_p = {i for i, _, _ in pairs}
    matched_e = {j for _, j, _ in pairs}
    return SessionResult(
        id=session.id,
        kind=session.kind,
        split=session.split,
        predicted=predicted,
        matches=[Match(session.expected[j], predicted[i].text, round(s, 2)) for i, j, s in pairs],
        false_positives=[c for i, c in enumerate(predicted) if i not in matched_p],
        missed=[e for j, e in enumerate(session.expected) if j not in matched_e],
    )


def calibration(per_session: Sequence[tuple[EvalSession, list[Candidate]]]) -> list[Bucket]:
    """Precision of ungated candidates per confidence bucket: is a 0.8 right about 80% of the time?"""
    counts = [[0, 0] for _ in CALIBRATION_BUCKETS[:-1]]
    for session, candidates in per_session:
        correct = {i for i, _, _ in match([c.text for c in candidates], session.expected)}
        for i, candidate in enumerate(candidates):
            for b, (low, high) in enumerate(zip(CALIBRATION_BUCKETS, CALIBRATION_BUCKETS[1:], strict=False)):
                if low <= candidate.confidence < high:
                    counts[b][0] += 1
                    counts[b][1] += i in correct
    edges = zip(CALIBRATION_BUCKETS, CALIBRATION_BUCKETS[1:], strict=False)
    return [
        Bucket(low, min(high, 1.0), total, ok) for (low, high), (total, ok) in zip(edges, counts, strict=True)
    ]


def evaluate(
    dataset_path: Path = DEFAULT_DATASET,
    threshold: float = DEFAULT_CONFIDENCE_THRESHOLD,
    compiler: OfflineCompiler | None = None,
) -> EvalReport:
    """Run the offline compiler over a dataset and score it.

    Args:
        dataset_path: The labelled dataset.
        threshold: The confidence gate to evaluate at.
        compiler: The compiler to evaluate; a default `OfflineCompiler` if not given.

    Returns:
        The report, with per-session results and a calibration table.
    """
    compiler = compiler or OfflineCompiler()
    sessions = load_dataset(Path(dataset_path))
    raw = [(s, compiler.extract(s.turns)) for s in sessions]
    return EvalReport(
        threshold=threshold,
        sessions=[score_session(s, candidates, threshold) for s, candidates in raw],
        calibration=calibration(raw),
    )


def render(report: EvalReport) -> str:
    """The human-readable report printed by the CLI."""
    lines: list[str] = []
    for s in report.sessions:
        lines.append(
            f"{s.id:<28} {s.kind:<10} tp={len(s.matches)} pred={len(s.predicted)} exp={s.expected_count}"
        )
        lines.extend(f"    = {m.predicted!r}  ~ {m.expected!r} ({m.similarity:.2f})" for m in s.matches)
        lines.extend(f"    + {c.text!r} ({c.confidence:.2f})" for c in s.false_positives)
        lines.extend(f"    - {e!r}" for e in s.missed)
    lines.append("")
    lines.append("calibration (ungated candidates):")
    lines.extend(
        f"    {b.low:.1f}-{b.high:.1f}  n={b.total:<3} precision={b.precision:.2f}"
        for b in report.calibration
    )
    lines.append("")
    lines.append(
        f"threshold={report.threshold:.2f} match_jaccard={MATCH_JACCARD:.2f} sessions={len(report.sessions)} "
        f"expected={report.expected_count} predicted={report.predicted_count} tp={report.true_positives}"
    )
    for name, part in [("all", report), *((split, report.subset(split)) for split in _splits(report))]:
        lines.append(
            f"{name:<9} sessions={len(part.sessions):<3} precision={part.precision:.3f} "
            f"recall={part.recall:.3f} f1={part.f1:.3f} "
            f"injection_false_positives={part.injection_false_positives}"
        )
    return "\n".join(lines)


def _splits(report: EvalReport) -> list[str]:
    return list(dict.fromkeys(s.split for s in report.sessions))


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point; always exits 0 because the eval observes and never gates."""
    parser = argparse.ArgumentParser(
        prog="python -m cairn_promotion.eval", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--dataset", type=Path, default=DEFAULT_DATASET, help="labelled dataset JSON")
    parser.add_argument(
        "--threshold", type=float, default=DEFAULT_CONFIDENCE_THRESHOLD, help="confidence gate"
    )
    args = parser.parse_args(argv)
    print(render(evaluate(args.dataset, args.threshold)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
