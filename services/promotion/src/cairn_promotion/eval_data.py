"""The promotion eval's inputs: the labelled dataset, the secret marks and the judged and entailed pairs.

See `cairn_promotion.eval` for the eval itself and eval/README.md for the files' formats.
"""

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from cairn_contracts.promotion import Turn

# The datasets are not package data: these defaults resolve only in a source checkout (else pass --dataset).
EVAL_DIR = Path(__file__).resolve().parents[2] / "eval"
DEFAULT_DATASET = EVAL_DIR / "dataset_v2.json"
JUDGED_PAIRS = EVAL_DIR / "judged_pairs.json"
ENTAILED_PAIRS = EVAL_DIR / "entailed_pairs.json"
SECRET_MARKS = EVAL_DIR / "secret_marks.json"
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


def load_entailed(path: Path = ENTAILED_PAIRS) -> dict[tuple[str, str], bool]:
    """Whether a label states an unmatched survivor in part (`eval/entailed_pairs.json`), keyed as
    `load_judged`'s verdicts: every annotator said the label states all the survivor says, and the survivor
    does not say the whole label (`whole`: then it is a second copy of the label, not a part)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    return {judged_key(p["memory"], p["fact"]): all(p["votes"]) and not p["whole"] for p in data["pairs"]}


def judged_key(survivor: str, label: str) -> tuple[str, str]:
    return survivor.casefold(), label
