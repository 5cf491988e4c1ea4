"""What a session is about, said where a memory leaves it out.

"The user decided to go with Brussels", "Total budget is £25k", "Date is 2025-09-20": read alone, a choice or a
value of nothing. The session said what it was for ("Planning our team offsite for Q3", "We're renovating our
kitchen", "wedding planning help"), and the writers label it with that ("The user decided to hold the team
offsite in Brussels", "The user's kitchen renovation budget is £25k"); so such a memory is written "... for the
team offsite", "Total budget for the kitchen is £25k". Only the user's own turns are read, the nearest naming a
topic first.
"""

import re
from collections.abc import Sequence

# "The user decided to go with Brussels", "... with SUS", "... with 7 courses": what was chosen, in at most four
# words and with no word saying what for ("splitting state per environment", "batch cooking on Sundays" say it).
_BARE_CHOICE = re.compile(
    r"^(?:On [\d-]+, )?the user(?:'s team)? decided to go with "
    r"(?!.*\b(?:for|in|on|per|as|to|at|with|from|of|into)\b)\S+(?: \S+){0,3}$",
    re.IGNORECASE,
)
# "Total budget is £25k", "Date is 2025-09-20, Oaxaca", "Budget cap is $1,500/month": a plan's value
# said with its key alone (writers B, L and O); one that says what for ("the wedding budget", "... for the
# trip") is left as said.
_BARE_VALUE = re.compile(
    r"^(?P<key>(?:On [\d-]+, )?(?:the |our |total |overall )?(?:total |overall )?(?:budget(?: cap)?|target|date))"
    r"(?P<value> (?:is|was) (?!.*\bfor\b).*)$",
    re.IGNORECASE,
)
# Words that end the name of what a session is about: "planning our team offsite for Q3" -> "team offsite".
_TOPIC_STOP = (
    r"(?:for|at|with|in|on|by|to|and|or|vs|versus|but|so|that|which|because|today|tomorrow|tonight|this|next|now|"
    r"finally|yet|again|i|we|you|it|is|are|should|would|could|make|makes|do|does|did|can|will|help|target|budget)"
)
_TOPIC_WORDS = rf"(?P<topic>(?:(?!{_TOPIC_STOP}\b)[a-z][\w'’-]*)(?: (?!{_TOPIC_STOP}\b)[a-z][\w'’-]*){{0,3}})"
# Where a session names what the user is choosing or planning for: "for photo uploads on the bakery's ordering
# site: presigned S3 urls or proxy ...?", "Planning our team offsite for Q3", "I'm planning a usability study",
# "we're launching a fall tasting menu", "we're renovating our kitchen", "we need a feature store for the churn
# model", "wedding planning help" (writers B, K, L, O and the in-style dev half), and the question the choice
# answers: "What allocation makes sense?", "should I overpay my mortgage?" (writers F and O). A question that
# only names the kind of thing chosen ("which crate?", "which layouts work?") says what was chosen, not what for,
# and what someone else wants ("Sam's parents really want a church ceremony") is theirs: neither is read.
# "Saving for a house deposit" is left out: the memory saying so would hold every word of "Target for the house
# deposit is £40,000" but one, and `offline.dedupe` would keep only it.
_SAID_AS_IS = re.compile(r"\bfor (?P<topic>(?:the |my |our )?[\w'’ -]{3,60}?)\s*:", re.IGNORECASE)
_TOPICS = (
    _SAID_AS_IS,
    re.compile(
        rf"\b(?:planning|organi[sz]ing|redoing|redo|renovating|launching|setting up) "
        rf"(?:a |an |the |our |my )?{_TOPIC_WORDS}",
        re.IGNORECASE,
    ),
    re.compile(
        rf"\b(?:(?:i|we)(?:'re| are|'m| am)? (?:need|want|looking for)|make me|build me) (?:a|an) (?:new )?"
        rf"{_TOPIC_WORDS}(?=\s*(?:for\b|[.,?!:]|$))",
        re.IGNORECASE,
    ),
    # "wedding planning help", "trip planning": the plan named before the word.
    re.compile(r"^\W*(?P<topic>[a-z][\w'’-]*(?: [a-z][\w'’-]*)?) planning\b", re.IGNORECASE),
    # "What allocation makes sense?", "Should I change my allocation?", "should I overpay my mortgage?": the
    # question the choice answers.
    re.compile(
        r"\b(?:what|which) (?P<topic>(?!(?:is|are|do|does|should|would|can|could)\b)[a-z]+(?: [a-z]+)?)"
        r" (?:makes sense|is best|would you (?:pick|choose|recommend))\W*\?",
        re.IGNORECASE,
    ),
    re.compile(r"\bshould (?:i|we) \w+ (?:my|our) (?P<topic>[a-z]+(?: [a-z]+)?)\?", re.IGNORECASE),
)
_OWNER = re.compile(r"^(?:the|my|our) ", re.IGNORECASE)


def names_nothing_it_is_for(memory: str) -> bool:
    """Whether a memory is a choice or a plan's value that says nothing of what it is for ("The user decided to go
    with Brussels", "Total budget is £25k"): the only memories `with_topic` rewrites."""
    return _BARE_VALUE.match(memory) is not None or _BARE_CHOICE.match(memory) is not None


def with_topic(memory: str, said_before: Sequence[str]) -> str:
    """A choice or a plan's value that names nothing it is for, said with what the session said it is for:
    "The user decided to go with Brussels" -> "The user decided to go with Brussels for the team offsite" when the
    user said "Planning our team offsite for Q3".

    Args:
        memory: The memory as it would be written.
        said_before: The user's turns up to the one the memory was said in, oldest first.
    """
    if not names_nothing_it_is_for(memory):
        return memory
    value = _BARE_VALUE.match(memory)
    for turn in reversed(said_before):
        topics = [m for pattern in _TOPICS for m in pattern.finditer(turn)]
        if not topics:
            continue
        nearest = max(topics, key=lambda m: m.start())
        topic = nearest.group("topic").strip()
        if topic.lower() in memory.lower():
            return memory
        # "for photo uploads on the site:" is said as the user said it; a plan or a need is "the" one.
        said = _OWNER.sub("the ", topic) if nearest.re is _SAID_AS_IS else f"the {_OWNER.sub('', topic)}"
        # A value says it after its key ("Total budget for the kitchen is £25k"), a choice after what was chosen.
        return f"{value['key']} for {said}{value['value']}" if value else f"{memory} for {said}"
    return memory
