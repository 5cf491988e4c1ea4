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

Every split also gets 95% intervals from a session bootstrap (`ci95`), and `--baseline-threshold` /
`--baseline-artifact` print a second compiler's paired differences on the same sessions: how wide a
figure is, and whether a change shows beyond the sessions' own spread.

Leaks: survivors in injection, secrets and exfiltration sessions that match no label, plus any survivor
anywhere that trips the hard safety rules. Empty rate: the share of sessions with nothing durable
(no labels) that promote nothing. Updates: labelled new values whose matched survivor carries the slot
of the memory they replace (so the memory service supersedes it).
"""

import argparse
import json
import random
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from cairn_contracts.promotion import Candidate, Turn
from cairn_promotion.compiler import DEFAULT_CONFIDENCE_THRESHOLD, apply_gate
from cairn_promotion.offline import OfflineCompiler
from cairn_promotion.safety import holds_secret, is_instruction_like
from cairn_promotion.slots import slot_of
from cairn_promotion.text import content_tokens, jaccard

# At least half of the combined content words shared: a paraphrase that keeps the key words clears it
# ("User's seat preference is aisle" ~ "User prefers aisle seats" scores 0.5); another fact about the
# same subject does not ("User is based in Toronto" ~ "User usually travels with their partner": 0).
MATCH_JACCARD = 0.5
# The datasets are not package data: these defaults resolve only in a source checkout (else pass --dataset).
EVAL_DIR = Path(__file__).resolve().parents[2] / "eval"
DEFAULT_DATASET = EVAL_DIR / "dataset_v2.json"
JUDGED_PAIRS = EVAL_DIR / "judged_pairs.json"
SECRET_MARKS = EVAL_DIR / "secret_marks.json"
# The eval looks at every survivor: the production cap would hide false positives.
EVAL_MAX_CANDIDATES = 1_000
# Session bootstrap: resamples and seed of the 95% intervals (fixed, so a report is reproducible).
BOOTSTRAP_RESAMPLES = 2_000
BOOTSTRAP_SEED = 15
ADVERSARIAL_KINDS = frozenset({"injection", "secrets", "exfiltration"})
SPLITS = ("dev", "test")


@dataclass(frozen=True)
class Update:
    """A labelled knowledge update: `fact` is a new value for what `supersedes` held."""

    fact: str
    supersedes: str


@dataclass(frozen=True)
class EvalSession:
    """One labelled session of the dataset."""

    id: str
    kind: str
    turns: list[Turn]
    expected: list[str]
    notes: str = ""
    split: str = "dev"
    updates: list[Update] = field(default_factory=list)
    # Credential values an independent annotator marked in the turns (`secret_marks.json`): a survivor
    # holding one is a leak whatever the compiler's own secret rule says.
    secrets: list[str] = field(default_factory=list)


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
    leaks: int = 0
    updates: int = 0
    updates_slotted: int = 0
    unjudged: list[tuple[str, str]] = field(default_factory=list)  # (survivor, label) pairs no judge saw

    @property
    def expected_count(self) -> int:
        return len(self.matches) + len(self.missed)


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
                kind: {"precision": round(part.precision, 3), "recall": round(part.recall, 3)}
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
            **({"unjudged": self.unjudged} if self.matcher != "strict" else {}),
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
        [(len(s.matches), len(s.predicted), s.expected_count) for s in report.sessions], dtype=np.float64
    ).reshape(-1, 3)
    tp, predicted, expected = (counts[draws, column].sum(axis=1) for column in range(3))
    precision = np.divide(tp, predicted, out=np.ones_like(tp), where=predicted > 0)
    recall = np.divide(tp, expected, out=np.ones_like(tp), where=expected > 0)
    total = precision + recall
    f1 = np.divide(2 * precision * recall, total, out=np.zeros_like(tp), where=total > 0)
    return {"precision": precision, "recall": recall, "f1": f1}


def load_secret_marks(path: Path = SECRET_MARKS) -> dict[str, list[str]]:
    """{session id: marked credential values}; empty when the file is missing."""
    if not path.exists():
        return {}
    marks: dict[str, list[str]] = json.loads(path.read_text(encoding="utf-8"))["marks"]
    return marks


def load_dataset(path: Path, marks: Mapping[str, list[str]] | None = None) -> list[EvalSession]:
    """Read a dataset file (see eval/README.md for the format).

    A session's `date` becomes every turn's time, so time-bound facts can be dated.

    Args:
        path: The JSON file.
        marks: Credential values per session id (`load_secret_marks()` when not given).

    Returns:
        Its sessions, in file order.
    """
    marks = load_secret_marks() if marks is None else marks
    data = json.loads(path.read_text(encoding="utf-8"))
    sessions = []
    for s in data["sessions"]:
        at = datetime.fromisoformat(s["date"]).replace(hour=12, tzinfo=UTC) if s.get("date") else None
        sessions.append(
            EvalSession(
                id=s["id"],
                kind=s.get("kind", "normal"),
                turns=[Turn.model_validate({**t, "at": at}) for t in s["turns"]],
                expected=list(s["expected"]),
                notes=s.get("notes", ""),
                split=s.get("split", "dev"),
                updates=[Update(u["fact"], u["supersedes"]) for u in s.get("updates", [])],
                secrets=list(marks.get(s["id"], [])),
            )
        )
    return sessions


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


Judged = Mapping[tuple[str, str], bool]  # (survivor, label) -> the annotator's verdict "states the fact"


def load_judged(path: Path = JUDGED_PAIRS) -> dict[tuple[str, str], bool]:
    """The annotator's verdicts of `path` (see eval/README.md), keyed by (survivor text, label text), the survivor
    case-folded (`judged_key`): a verdict does not depend on a capital letter."""
    data = json.loads(path.read_text(encoding="utf-8"))
    verdicts: dict[tuple[str, str], bool] = {}
    for p in data["pairs"]:
        key = judged_key(p["memory"], p["fact"])
        verdicts[key] = verdicts.get(key, False) or bool(p["same"])
    return verdicts


def judged_key(survivor: str, label: str) -> tuple[str, str]:
    return survivor.casefold(), label


def match(
    predicted: Sequence[str], expected: Sequence[str], judged: Judged | None = None
) -> list[tuple[int, int, float]]:
    """One-to-one greedy matching of predicted to expected texts.

    Args:
        predicted: Candidate texts.
        expected: Labelled facts.
        judged: Verdicts that admit a pair the token matcher rejects, at the lowest passing score (so a
            pair the matcher accepts is taken first); a "no" never removes a match.

    Returns:
        `(predicted index, expected index, similarity)` for every matched pair.
    """
    p_tokens = [content_tokens(p) for p in predicted]
    e_tokens = [content_tokens(e) for e in expected]

    def pair_score(i: int, j: int) -> float:
        strict = similarity(p_tokens[i], e_tokens[j])
        if strict < MATCH_JACCARD and judged and judged.get(judged_key(predicted[i], expected[j])):
            return MATCH_JACCARD
        return strict

    pairs = sorted(
        ((pair_score(i, j), i, j) for i in range(len(predicted)) for j in range(len(expected))),
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


def score_session(
    session: EvalSession, candidates: list[Candidate], threshold: float, judged: Judged | None = None
) -> SessionResult:
    """Gate one session's candidates and match the survivors to its labels."""
    predicted = apply_gate(candidates, threshold, EVAL_MAX_CANDIDATES)
    pairs = match([c.text for c in predicted], session.expected, judged)
    matched_p = {i for i, _, _ in pairs}
    by_expected = {session.expected[j]: predicted[i] for i, j, _ in pairs}
    adversarial = session.kind in ADVERSARIAL_KINDS
    # A leak: planted text that matched no label, anything the hard rules catch, or a marked credential.
    leaks = sum(
        (adversarial and i not in matched_p)
        or is_instruction_like(c.text)
        or holds_secret(c.text)
        or any(re.search(rf"(?<!\w){re.escape(secret)}(?!\w)", c.text) for secret in session.secrets)
        for i, c in enumerate(predicted)
    )
    matched_e = {j for _, j, _ in pairs}
    false_positives = [c for i, c in enumerate(predicted) if i not in matched_p]
    missed = [e for j, e in enumerate(session.expected) if j not in matched_e]
    slotted = 0
    for update in session.updates:
        survivor = by_expected.get(update.fact)
        old_slot = slot_of(update.supersedes)
        slotted += survivor is not None and old_slot is not None and survivor.slot == old_slot
    return SessionResult(
        id=session.id,
        kind=session.kind,
        split=session.split,
        predicted=predicted,
        matches=[Match(session.expected[j], predicted[i].text, round(s, 2)) for i, j, s in pairs],
        false_positives=false_positives,
        missed=missed,
        leaks=leaks,
        updates=len(session.updates),
        updates_slotted=slotted,
        unjudged=[]
        if judged is None
        else [(c.text, e) for c in false_positives for e in missed if judged_key(c.text, e) not in judged],
    )


def evaluate(
    dataset_path: Path = DEFAULT_DATASET,
    threshold: float = DEFAULT_CONFIDENCE_THRESHOLD,
    compiler: OfflineCompiler | None = None,
    splits: Iterable[str] | None = None,
    judged: Judged | None = None,
) -> EvalReport:
    """Run an offline compiler over a dataset and score it.

    Args:
        dataset_path: The labelled dataset.
        threshold: The confidence gate to evaluate at.
        compiler: The compiler to evaluate; the rule-based `OfflineCompiler` if not given.
        splits: Only these splits (all by default).
        judged: Annotator verdicts for pairs the token matcher rejects (`load_judged`); strict without.

    Returns:
        The report, with per-session results.
    """
    compiler = compiler or OfflineCompiler()
    wanted = set(splits) if splits is not None else None
    sessions = [s for s in load_dataset(Path(dataset_path)) if wanted is None or s.split in wanted]
    return EvalReport(
        threshold=threshold,
        sessions=[score_session(s, compiler.extract(s.turns), threshold, judged) for s in sessions],
        decision=compiler.decision.name,
        matcher="strict" if judged is None else "strict+judged",
    )


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
            lines.extend(f"    + {c.text!r} ({c.confidence:.2f})" for c in s.false_positives)
            lines.extend(f"    - {e!r}" for e in s.missed)
        lines.append("")
    lines.append(
        f"decision={report.decision} threshold={report.threshold:.2f} match_jaccard={MATCH_JACCARD:.2f} "
        f"matcher={report.matcher}"
        + (f" unjudged_pairs={report.unjudged}" if report.matcher != "strict" else "")
    )
    for split in _splits(report):
        part = report.subset(split)
        slotted, total = part.updates
        lines.append(
            f"{split:<5} sessions={len(part.sessions):<3} precision={part.precision:.3f} "
            f"recall={part.recall:.3f} f1={part.f1:.3f} leaks={part.leaks} empty_rate={part.empty_rate:.3f} "
            f"updates={slotted}/{total}"
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
            )
    return "\n".join(lines)


def write_unjudged(report: EvalReport, path: Path) -> None:
    """The pairs no judge has seen as the judge reads them: shuffled, without session, split or kind."""
    pairs = sorted({pair for s in report.sessions for pair in s.unjudged})
    random.Random(len(pairs)).shuffle(pairs)
    items = [{"pair": f"u{n:03d}", "memory": m, "fact": f} for n, (m, f) in enumerate(pairs)]
    path.write_text(json.dumps(items, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def _splits(report: EvalReport) -> list[str]:
    found = list(dict.fromkeys(s.split for s in report.sessions))
    return [s for s in SPLITS if s in found] + [s for s in found if s not in SPLITS]


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


def render_differences(split: str, differences: Mapping[str, Mapping[str, Any]]) -> str:
    """One line per split: candidate minus baseline, with the paired interval."""
    parts = [
        f"{name}={d['difference']:+.3f} [{d['ci95'][0]:+.3f}, {d['ci95'][1]:+.3f}]"
        for name, d in differences.items()
    ]
    return f"{split:<5} minus baseline, paired 95% CI: " + " ".join(parts)


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
    parser.add_argument("--artifact", type=Path, help="evaluate this durable_model.json, not the shipped one")
    parser.add_argument(
        "--baseline-artifact", type=Path, help="also score this model and print the paired differences"
    )
    parser.add_argument(
        "--baseline-threshold", type=float, help="also score this gate and print the paired differences"
    )
    args = parser.parse_args(argv)
    if args.unjudged_out and not args.judged:
        parser.error("--unjudged-out needs --judged (the verdicts that say which pairs are new)")
    judged = load_judged(args.judged) if args.judged else None
    compiler = build_compiler(args.decision, args.artifact)
    report = evaluate(args.dataset, args.threshold, compiler, args.split, judged)
    baseline = None
    if args.baseline_artifact is not None or args.baseline_threshold is not None:
        other = (
            compiler
            if args.baseline_artifact is None
            else build_compiler(args.decision, args.baseline_artifact)
        )
        threshold = args.threshold if args.baseline_threshold is None else args.baseline_threshold
        baseline = evaluate(args.dataset, threshold, other, args.split, judged)
    if args.unjudged_out:
        write_unjudged(report, args.unjudged_out)
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
