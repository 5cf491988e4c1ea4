"""How the user wants every answer to look, asked for in passing: "please keep answers short, I read these on my
phone" -> "The user prefers short answers".

The learned decision scores such a request as the one-off it is worded like (0.20-0.35 for "keep answers short
pls", 0.94 once "always" is said), yet the outside writers label it a lasting preference in 7 of 9 sessions that
say it. Only answers, replies, steps and explanations in general count: "keep it short" is about the message being
written, and a reason of the moment beside it ("I'm on my phone rn", "on the train") makes it a request for now,
unless it is said to last ("in general", "I always prefer that").

Three more forms of the same preference, each asked for with a "please" or said to hold ("ever", a contrast), are
labelled by the outside writers in every session that says them (10 of 10): what every answer should leave out
("please no tables in the output, ever", "keep answers short, no bullet points"), how to be contacted ("reply by
email, not phone", "pls email me not call"), and a form asked for over another ("give me short diffs rather than
full files", "give me lists as plain checkboxes").
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


_LEFT_OUT = r"tables|bullet points|bullets|emojis?|inline comments|code comments|markdown|headers|jargon"
# "please no tables in the output, ever", "no inline comments in the code", "no tables ever".
_NO_FORM = re.compile(
    rf"\bno (?P<what>{_LEFT_OUT})(?: in (?:the |your )?(?P<where>output|answers?|replies|responses|code))?"
    r"(?P<ever>,? ever)?\b",
    re.IGNORECASE,
)
_WHERE = {"output": "the output", "answer": "answers", "replies": "answers", "responses": "answers"}
_ASKED = re.compile(r"\b(?:please|pls|plz)\b", re.IGNORECASE)
_OPENS_WITH_NO = re.compile(r"\W*(?:(?:and|also|but|oh|oh and),? )?no ", re.IGNORECASE)
# "please reply by email, not phone", "pls email me not call".
_BY_EMAIL = re.compile(
    r"\b(?:(?:reply|respond|contact me|get back to me|reach me|write)(?: to me)? (?:by|via|over) e-?mail"
    r"|e-?mail me),? (?:not|rather than|instead of|don't) (?:by |a )?(?:phone|call|ring)",
    re.IGNORECASE,
)
_FORM_NOUNS = r"diffs|lists|answers|replies|steps|examples|snippets|summaries|outlines|explanations|instructions|citations"
# "give me short diffs rather than full files", "give me lists as plain checkboxes I can paste".
_GIVE_ME = re.compile(
    rf"\bgive me (?P<what>(?:[\w-]+ )?(?:{_FORM_NOUNS})) (?P<how>(?:rather than|instead of|over) [\w -]+?"
    r"|as (?:plain |simple |numbered )?(?:checkboxes|bullet points|bullets|markdown|plain text|a table))"
    r"(?= (?:I|you|that|which|so)\b|[,.;!?]|$)",
    re.IGNORECASE,
)


# "keep answers short in general", "I always prefer that": said to last, whatever the moment.
_STANDING = re.compile(r"\b(?:in general|generally|always|from now on|going forward)\b", re.IGNORECASE)
_AROUND = 100  # characters of the turn read on each side of the clause for the reason given with it


def answer_form(clause: str, turn: str) -> list[str]:
    """The preference one user clause states about the form of every answer; none when the words around it in
    the turn say it is for now."""
    fact = _form_asked_for(clause)
    if fact is None:
        return []
    at = turn.lower().find(clause.lower())
    around = turn[max(0, at - _AROUND) : at + len(clause) + _AROUND] if at >= 0 else turn
    if _NOW.search(around) and not _STANDING.search(around):
        return []
    return [fact]


def _form_asked_for(clause: str) -> str | None:
    """The preference a clause asks for, whatever the moment it is said in; None for any other clause."""
    if _BY_EMAIL.search(clause):
        return "The user prefers email over phone calls"
    if (given := _GIVE_ME.search(clause)) is not None:
        return f"The user prefers {given.group('what')} {given.group('how')}"
    left_out = _NO_FORM.search(clause)
    without = left_out.group("what").lower() if left_out is not None else None
    if (short := _KEEP_SHORT.search(clause)) is not None:
        what = short.group("what").lower()
        plural = what if what.endswith("s") else {"reply": "replies"}.get(what, f"{what}s")
        form = (short.group("form") or "short and simple").lower()
        return f"The user prefers {form} {plural}" + (f" without {without}" if without else "")
    # Asked for, said to hold, or the whole request: never "the export has no tables in the output".
    if left_out is None or not (
        _ASKED.search(clause) or left_out.group("ever") or _OPENS_WITH_NO.match(clause)
    ):
        return None
    where = (left_out.group("where") or "answers").lower()
    return f"The user wants no {without} in {_WHERE.get(where, where)}"


def answer_form_candidates(clause: str, turn: str) -> list[Candidate]:
    """One candidate per preference `answer_form` reads; none from a clause holding a credential."""
    if holds_secret(clause):
        return []
    return [profile_candidate(fact, "preference") for fact in answer_form(clause, turn)]
