"""The promotion compiler seam: what the workflow and activities import, and nothing heavier.

A compiler turns the recent turns of a session into candidate durable memories (`Compiler`). The
workflow gates them (`apply_gate`) and watermarks the session by content (`session_fingerprint`).
The built-in compiler lives in `offline`, its pieces in `safety` (hard rules), `text` (sentences and
clauses), `rules` and `learned` (the durable-fact decision), `rewrite` (self-contained facts) and
`slots` (what a fact is about, for knowledge updates).
"""

import hashlib
import json
from collections.abc import Iterable, Sequence
from typing import Protocol

from cairn_contracts.promotion import Candidate, Turn

DEFAULT_MAX_TURNS = 40
DEFAULT_MAX_CHARS = 16_000
DEFAULT_CONFIDENCE_THRESHOLD = 0.6
DEFAULT_MAX_CANDIDATES = 20

READABLE_ROLES = frozenset({"user", "assistant", "fact"})


class Compiler(Protocol):
    """Turns a session's turns into candidate durable memories."""

    async def compile(self, turns: Sequence[Turn]) -> list[Candidate]:
        """Compile a session.

        Args:
            turns: The session's turns, oldest first. Content is untrusted data.

        Returns:
            Candidates in no guaranteed order; the caller gates them with `apply_gate`.
        """
        ...


def recent_window(turns: Sequence[Turn], max_turns: int, max_chars: int) -> list[Turn]:
    """The most recent readable turns that fit both budgets, oldest first.

    Tool and system turns are left out before budgeting so a large tool dump cannot push the user's
    own words out of the window.

    Args:
        turns: The session's turns, oldest first.
        max_turns: Maximum number of turns to keep.
        max_chars: Maximum total content length; the newest turn is truncated if it alone exceeds it.

    Returns:
        The window, oldest first.
    """
    readable = [t for t in turns if t.role.strip().lower() in READABLE_ROLES][-max_turns:]
    window: list[Turn] = []
    used = 0
    for turn in reversed(readable):
        if used + len(turn.content) > max_chars:
            if not window:
                window.append(turn.model_copy(update={"content": turn.content[:max_chars]}))
            break
        window.append(turn)
        used += len(turn.content)
    window.reverse()
    return window


def apply_gate(candidates: Iterable[Candidate], threshold: float, max_candidates: int) -> list[Candidate]:
    """The confidence gate: drop weak candidates, keep the strongest, cap the count.

    Exact repeats (same text, ignoring case and surrounding whitespace) collapse to the most
    confident one, so a compiler that says a fact twice cannot use two slots of the cap.

    Args:
        candidates: Candidates from any compiler.
        threshold: Minimum confidence to survive (inclusive), in [0, 1].
        max_candidates: Maximum number of survivors; 0 or less keeps nothing.

    Returns:
        Survivors, highest confidence first; ties keep their input order.
    """
    if not 0.0 <= threshold <= 1.0:
        raise ValueError("threshold must be within [0, 1]")
    ranked = sorted(candidates, key=lambda c: -c.confidence)
    survivors: list[Candidate] = []
    seen: set[str] = set()
    for candidate in ranked:
        key = " ".join(candidate.text.split()).casefold()
        if candidate.confidence < threshold or key in seen:
            continue
        seen.add(key)
        survivors.append(candidate)
    return survivors[: max(max_candidates, 0)]


def session_fingerprint(turns: Sequence[Turn]) -> str:
    """A stable content hash of a session: the promotion watermark.

    JSON framing makes the encoding unambiguous, so moving text between role and content, or between
    adjacent turns, changes the hash. Turn times are not part of it: the same words are the same session.

    Args:
        turns: The session's turns, in order.

    Returns:
        The hex sha256 of the turns' roles and contents in order.
    """
    payload = json.dumps([[t.role, t.content] for t in turns], ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()
