"""How the user wants every answer to look, asked for in passing: "please keep answers short, I read these on my
phone" -> "The user prefers short answers".

The learned decision scores such a request as the one-off it is worded like (0.20-0.35 for "keep answers short
pls", 0.94 once "always" is said), yet the outside writers label it a lasting preference in 7 of 9 sessions that
say it. Only answers, replies, steps and explanations in general count: "keep it short" is about the message being
written, and a reason of the moment beside it ("I'm on my phone rn", "on the train") makes it a request for now,
unless it is said to last ("in general", "I always prefer that").
"""

import re

from cairn_contracts.promotion import Candidate
from cairn_promotion.names import profile_candidate
from cairn_promotion.safety import holds_secret

_ANSWERS = r"answers?|repl(?:y|ies)|responses?|steps|explanations?|instructions"
_FORM = r"short|brief|concise|simple"
# "keep answers short", "please keep your replies short", "keep your steps short and simple".
_KEEP_SHORT = re.compile(
    rf"\bkeep (?:the |your )?(?P<what>{_ANSWERS})(?: short and simple| simple and short| (?P<form>{_FORM}))\b",
    re.IGNORECASE,
)
_NOW = re.compile(
    r"\b(?:rn|right now|atm|at the moment|for now|today|tonight|this time|on the train|in a rush|in a hurry|"
    r"slammed)\b",
    re.IGNORECASE,
)


# "keep answers short in general", "I always prefer that": said to last, whatever the moment.
_STANDING = re.compile(r"\b(?:in general|generally|always|from now on|going forward)\b", re.IGNORECASE)
_AROUND = 100  # characters of the turn read on each side of the clause for the reason given with it


def answer_form(clause: str, turn: str) -> list[str]:
    """The preference one user clause states about the form of every answer; none when the words around it in
    the turn say it is for now."""
    match = _KEEP_SHORT.search(clause)
    if match is None:
        return []
    at = turn.lower().find(clause.lower())
    around = turn[max(0, at - _AROUND) : at + len(clause) + _AROUND] if at >= 0 else turn
    if _NOW.search(around) and not _STANDING.search(around):
        return []
    what = match.group("what").lower()
    plural = what if what.endswith("s") else {"reply": "replies"}.get(what, f"{what}s")
    form = (match.group("form") or "short and simple").lower()
    return [f"The user prefers {form} {plural}"]


def answer_form_candidates(clause: str, turn: str) -> list[Candidate]:
    """One candidate per preference `answer_form` reads; none from a clause holding a credential."""
    if holds_secret(clause):
        return []
    return [profile_candidate(fact, "preference") for fact in answer_form(clause, turn)]
