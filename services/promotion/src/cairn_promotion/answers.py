"""What the user answers to the assistant's question about them: "Are you on other meds?" -> "sertraline 50mg" is
"The user takes sertraline 50mg"; "What's your Miles&Smiles number?" -> "TK 318442907" is "The user's Miles&Smiles
number is TK 318442907"; "Want carb counts with recipes?" -> "yes always" is "The user always wants carb counts with
recipes".

The answer alone names no one and no attribute, so the decision scores it near 0 (0.02-0.26 on the outside sets),
and the fact is in the question. Only a question of a few shapes is read, and only a short answer that opens the
user's next turn; an attribute that is a credential is never asked for here (`holds_secret` reads the fact too).
"""

import re

from cairn_contracts.promotion import Candidate
from cairn_promotion.names import profile_candidate
from cairn_promotion.rewrite import third_person
from cairn_promotion.safety import holds_secret, is_instruction_like

# The question is the last one the assistant's turn asks.
_QUESTION = re.compile(r"[^.!?\n]*\?")
_WHAT_IS_YOUR = re.compile(r"^\s*(?:what|who)(?:'s| is) your (?P<attr>[\w&' -]{2,30}?)\s*\?$", re.IGNORECASE)
# "What router do you have?", "Which database do you use?": the thing the user has is the attribute asked.
_WHAT_DO_YOU_HAVE = re.compile(
    r"^\s*(?:what|which) (?P<attr>[\w&' -]{2,30}?) (?:do you (?:have|use|run)|are you (?:using|running|on))\s*\?$",
    re.IGNORECASE,
)
# "How often do you file VAT?" -> "quarterly": how often the user does it.
_HOW_OFTEN = re.compile(
    r"^\s*how often do you (?P<verb>[a-z]+)(?P<rest>(?: (?!(?:it|them|that|this|those|these)\b)[\w&' -]{1,30}?)?)"
    r"\s*\?$",
    re.IGNORECASE,
)
# "Who's your ISP and what modem do you have?" -> "comcast, arris sb8200": one answer per question asked.
_AND = re.compile(r",?\s+and\s+")
_ON_MEDS = re.compile(
    r"\b(?:are you on|do you take) (?:any )?(?:other )?(?:meds|medications?|medicines?)\b", re.I
)
_DO_YOU_USE = re.compile(r"^\s*do you use (?:a |an |any )?(?P<what>[\w&' -]{2,30}?)\s*\?$", re.IGNORECASE)
_SENSITIVE = re.compile(
    r"\b(?:password|passcode|passphrase|pin|key|token|secret|ssn|social security|card|cvv|cvc|login|otp|code)\b",
    re.IGNORECASE,
)
# Not an answer with a value: "yes", "not sure", "I think so", "why?".
_NO_VALUE = re.compile(
    r"^(?:yes|yeah|yep|yup|no|nope|nah|not|maybe|idk|dunno|sure|ok|okay|thanks|thank|lol|haha|i|we|it|that|"
    r"this|why|what|how|none|nothing)\b",
    re.IGNORECASE,
)
# "Want carb counts with recipes?" -> "yes always": a yes said to last makes the offer a standing wish. A bare "yes"
# accepts this one offer ("Want me to draft it?" -> "yes").
_WANT = re.compile(
    r"^\s*(?:do you |would you )?(?:want|like) (?!me\b|us\b|to\b|it\b|that\b|this\b)(?P<what>[\w&' -]{2,40}?)\s*\?$",
    re.IGNORECASE,
)
_YES_ALWAYS = re.compile(
    r"^(?:yes|yeah|yep|yup|sure)\b[\s,!-]*(?:please[\s,!-]*)?(?:always|every time|from now on|going forward)$",
    re.IGNORECASE,
)
_STATEMENT = re.compile(r"\b(?:is|are|was|were|has|have|had|do|does|did|will|can)\b", re.IGNORECASE)
_MAX_ANSWER_WORDS = 5


# The answer is the turn's whole first sentence: "258, oh wait I retested yesterday, it's 265 W now" goes on to
# take the value back.
_SENTENCE_ENDS = re.compile(r"\s*(?:$|[.!]|\n)")
_FIRST_SENTENCE = re.compile(r"[^.!?\n]*")


def answered(question_turn: str, answer: str, turn: str | None = None) -> list[str]:
    """The fact an answer (the first clause of the user's `turn`) states, read with the assistant's question
    before it; none for any other pair."""
    questions = _QUESTION.findall(question_turn)
    said = (turn if turn is not None else answer).lstrip()
    # The clause may have lost its "yes" as a discourse word ("yes always." is read as "always.").
    first = _FIRST_SENTENCE.match(said)
    if questions and first and _YES_ALWAYS.match(first.group().strip()):
        wanted = _WANT.match(questions[-1].strip())
        if wanted is None or _SENSITIVE.search(wanted.group("what")):
            return []
        return [f"The user always wants {wanted.group('what').strip()}"]
    if questions and first and (both := _two_answers(questions[-1].strip(), first.group().strip())):
        return both
    value = answer.strip().rstrip(".!")
    if not said.startswith(value) or not _SENTENCE_ENDS.match(said, len(value)):
        return []
    if not questions or not _is_bare_value(value):
        return []
    question = questions[-1].strip()
    # "Who is your provider, and have you restarted the router?" -> "Vodafone": the first question answered.
    first_asked = _AND.split(question.rstrip("?").strip())[0] + "?"
    if (fact := _attribute(question, value) or _attribute(first_asked, value)) is not None:
        return [fact]
    if (match := _HOW_OFTEN.match(question)) is not None and not _SENSITIVE.search(question):
        return [f"The user {third_person(match.group('verb').lower())}{match.group('rest')} {value}"]
    if _ON_MEDS.search(question):
        return [f"The user takes {value}"]
    if (match := _DO_YOU_USE.match(question)) is not None and not _SENSITIVE.search(match.group("what")):
        return [f"The user uses {value}"]
    return []


def _is_bare_value(value: str) -> bool:
    """Whether an answer is a short value: not "yes" or "not sure", not a question back, not a statement the
    decision reads itself ("MSRV is 1.74")."""
    return (
        bool(value)
        and len(value.split()) <= _MAX_ANSWER_WORDS
        and not _NO_VALUE.match(value)
        and "?" not in value
        and not _STATEMENT.search(value)
    )


def _attribute(question: str, value: str) -> str | None:
    """The attribute a question asks the user's value of, said with the value ("The user's router is ...")."""
    for shape in (_WHAT_IS_YOUR, _WHAT_DO_YOU_HAVE):
        if (match := shape.match(question)) is not None and not _SENSITIVE.search(match.group("attr")):
            return f"The user's {match.group('attr').strip()} is {value}"
    return None


def _two_answers(question: str, sentence: str) -> list[str]:
    """Two attributes asked in one question and answered in one sentence, in order; none for anything else."""
    asked = _AND.split(question.rstrip("?").strip())
    values = [v.strip() for v in sentence.rstrip(".!").split(",")]
    if len(asked) != 2 or len(values) != 2:
        return []
    facts = []
    for part, value in zip(asked, values, strict=True):
        if not _is_bare_value(value):
            return []
        fact = _attribute(part.rstrip() + "?", value)
        if fact is None:
            return []
        facts.append(fact)
    return facts


def answered_candidates(question_turn: str, answer: str, turn: str) -> list[Candidate]:
    """One candidate per fact `answered` reads; none that holds a credential or reads as an instruction."""
    return [
        profile_candidate(fact)
        for fact in answered(question_turn, answer, turn)
        if not holds_secret(fact) and not is_instruction_like(fact)
    ]
