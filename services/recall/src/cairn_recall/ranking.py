"""Pure ranking logic of hybrid recall: reciprocal rank fusion and the speaker prior for conversation turns."""

import re
import uuid
from typing import NamedTuple

from cairn_contracts.recall import SelectionReason


class Ranked(NamedTuple):
    """One candidate of one side's list (a tuple: about a hundred are built per recall)."""

    id: uuid.UUID
    value: float  # distance for semantic lists, rank for keyword lists
    coverage: float = 1.0  # keyword lists: share of the query's idf mass the row matches
    speaker: str | None = None  # who said it, for a memory that is a conversation turn (`speaker_of`)


class Fused(NamedTuple):
    id: uuid.UUID
    reason: SelectionReason
    score: float


def fuse(
    semantic: list[Ranked],
    keyword: list[Ranked],
    k: int,
    keyword_weight: float = 1.0,
    coverage_power: float = 0.0,
) -> list[Fused]:
    """Weighted reciprocal rank fusion: a list contributes weight / (k + rank); ties keep semantic order.

    With `coverage_power` > 0 a keyword hit's weight is scaled by coverage ** power, so a row that shares
    only a common word with a paraphrased question cannot push a semantic match out of the page."""
    # Keyed by the id's integer: a UUID hashes in Python code, and a recall fuses about a hundred ids.
    scores: dict[int, float] = {}
    found: dict[int, tuple[uuid.UUID, int]] = {}  # the id, and which lists hold it (1 semantic, 2 keyword)
    for ranked, weight, side in ((semantic, 1.0, 1), (keyword, keyword_weight, 2)):
        for rank, item in enumerate(ranked, start=1):
            key = item.id.int
            scale = item.coverage**coverage_power if coverage_power else 1.0
            scores[key] = scores.get(key, 0.0) + weight * scale / (k + rank)
            found[key] = (item.id, found[key][1] | side if key in found else side)
    # Stable: equal scores keep their first appearance, semantic order first.
    ordered = sorted(scores, key=scores.__getitem__, reverse=True)
    return [Fused(found[m][0], _REASONS[found[m][1]], scores[m]) for m in ordered]


_REASONS: dict[int, SelectionReason] = {1: "semantic", 2: "keyword", 3: "keyword+semantic"}


# A memory that records one turn of a conversation: "[2023/05/20 (Sat) 00:31] user: ..." or "assistant: ...".
_SPEAKER_TAG = re.compile(r"^\s*(?:\[[^\]\n]{1,60}\]\s*)?(user|assistant|human|ai)\s*:", re.IGNORECASE)
_CANONICAL = {"user": "user", "human": "user", "assistant": "assistant", "ai": "assistant"}
# A question about what the assistant itself said ("can you remind me what you recommended?").
_ASKS_ASSISTANT = re.compile(
    r"\b(you|your)\b.*\b(remind|mention|recommend|suggest|told|said|gave|give|list|provid|shar|previous|earlier"
    r"|last time)|\b(remind|mention|recommend|suggest|told|said|gave|provid|previous|earlier)\w*\b.*\byou\b",
    re.IGNORECASE,
)


def speaker_of(text: str, metadata_role: str | None) -> str | None:
    """`user` / `assistant` for a memory that is one conversation turn (metadata `role` or a leading
    speaker tag), else None: ordinary memories have no speaker and are never demoted."""
    if metadata_role and metadata_role.lower() in _CANONICAL:
        return _CANONICAL[metadata_role.lower()]
    found = _SPEAKER_TAG.match(text)
    return _CANONICAL[found.group(1).lower()] if found else None


def wanted_speaker(query: str) -> str:
    """Whose turns a question is about: the assistant's when it asks what the assistant said, else the user's."""
    return "assistant" if _ASKS_ASSISTANT.search(query) else "user"


def speaker_prior(
    fused: list[Fused], speakers: dict[uuid.UUID, str | None], wanted: str, factor: float
) -> list[Fused]:
    """Demote turns by the other speaker: their fused score is multiplied by `factor` (1.0 disables).

    Measured on LongMemEval (bench/longmemeval.py): questions about the user's own life are answered by the
    user's turns, while long assistant turns on the same topic outrank them on both lists."""
    if factor >= 1.0:
        return fused
    adjusted = [
        f._replace(score=f.score * factor) if speakers.get(f.id) not in (None, wanted) else f for f in fused
    ]
    return sorted(adjusted, key=lambda f: -f.score)
