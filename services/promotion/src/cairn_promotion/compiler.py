"""The promotion compiler seam: what the workflow and activities import, and nothing heavier.

A compiler turns the recent turns of a session into candidate durable memories (`Compiler`). The
workflow gates them (`apply_gate`) and watermarks the session by content (`session_fingerprint`).
The built-in compiler lives in `offline`, its pieces in `safety` (hard rules), `text` (sentences and
clauses), `rules` and `learned` (the durable-fact decision), `rewrite` (self-contained facts) and
`slots` (what a fact is about, for knowledge updates).
"""

import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from typing import Protocol

from cairn_contracts.promotion import Candidate, Turn

DEFAULT_MAX_TURNS = 40  # user and fact turns; assistant replies ride along within their own budget
DEFAULT_MAX_CHARS = 16_000
REPLY_TAIL_CHARS = 1_000
_SENTENCE_START = re.compile(r"(?<=[.!?])\s+|\n+")
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


def recent_window(
    turns: Sequence[Turn], max_turns: int, max_chars: int, max_reply_chars: int | None = None
) -> list[Turn]:
    """The most recent readable turns that fit the budgets, oldest first.

    The budgets count what states facts: user and fact turns. Assistant replies are context (what a
    following "yes, do that" confirms), not facts, and are often far longer than the user's words, so
    they have a budget of their own: each reply keeps at most its last `REPLY_TAIL_CHARS` (where a
    proposal or question sits), all of them together at most `max_reply_chars`, newest first, and none
    older than the oldest user turn kept (or the reply that turn answers). So a session of long replies
    can no longer push its early user turns out of the window.

    Tool and system turns are left out before budgeting so a large tool dump cannot push the user's
    own words out of the window.

    Args:
        turns: The session's turns, oldest first.
        max_turns: Maximum number of user and fact turns to keep.
        max_chars: Maximum total length of those turns; the newest is truncated if it alone exceeds it.
        max_reply_chars: Maximum total length of the assistant replies kept; `max_chars // 4` if None.

    Returns:
        The window, oldest first.
    """
    readable = [t for t in turns if t.role.strip().lower() in READABLE_ROLES]
    is_reply = [t.role.strip().lower() == "assistant" for t in readable]
    kept: dict[int, Turn] = {}
    used = 0
    for index in reversed([i for i, reply in enumerate(is_reply) if not reply]):
        turn = readable[index]
        if len(kept) >= max_turns:
            break
        if used + len(turn.content) > max_chars:
            if not kept:
                kept[index] = turn.model_copy(update={"content": turn.content[:max_chars]})
            break
        kept[index] = turn
        used += len(turn.content)
    oldest = min(kept) - 1 if kept else 0
    reply_budget = max_chars // 4 if max_reply_chars is None else max_reply_chars
    for index in reversed(range(max(oldest, 0), len(readable))):
        if not is_reply[index] or reply_budget <= 0:
            continue
        tail = reply_tail(readable[index].content, min(REPLY_TAIL_CHARS, reply_budget))
        kept[index] = readable[index].model_copy(update={"content": tail})
        reply_budget -= len(tail)
    return [kept[i] for i in sorted(kept)]


def reply_tail(content: str, limit: int) -> str:
    """The last `limit` characters of a reply, starting at a sentence or line start when one is inside."""
    if len(content) <= limit:
        return content
    tail = content[len(content) - limit :]
    start = _SENTENCE_START.search(tail)
    return tail[start.end() :] if start and start.end() < len(tail) else tail


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
