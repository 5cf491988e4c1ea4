"""A decision the user made, said with what was decided: "The user decided to go with the galley layout", and
with what it was for when the session named that and the decision does not ("The user decided to go with
Brussels for the team offsite").

The writers label every such decision as lasting (the brief: "a decision the user explicitly agrees to IS
durable"), and kept ones match a label 70 times in 87 on the outside and in-style sets; yet the learned decision
scores some low where the clause was a bare "going with X" or "let's do X" (0.32-0.59, all ten labelled). A
memory of this shape is kept at the names' confidence, unless what was decided is only a pronoun ("The user
decided to go with that") or nothing at all ("The user's team has decided"): that says what, only in the turn.
"""

import re
from collections.abc import Sequence

_DECIDED = re.compile(
    r"^(?:on [\d-]+, )?the user(?:'s team)? (?:has |have |just |finally )?(?:decided|settled|agreed)"
    r"(?: to (?:go with|use|do|set|move|switch|keep|adopt|pick|try)| on) (?P<what>.+)$",
    re.IGNORECASE,
)
_ONLY_A_POINTER = re.compile(r"^(?:it|that|this|them|those|these|one|so)\b\W*$", re.IGNORECASE)


def states_a_decision(memory: str) -> bool:
    """Whether a memory is a decision of the user's that says what was decided."""
    decided = _DECIDED.match(memory)
    return decided is not None and _ONLY_A_POINTER.match(decided.group("what")) is None


# "The user decided to go with Brussels", "... with SUS", "... with 7 courses": what was chosen, in at most four
# words and with no word saying what for ("splitting state per environment", "batch cooking on Sundays" say it).
_BARE_CHOICE = re.compile(
    r"^(?P<head>(?:On [\d-]+, )?the user(?:'s team)? decided to go with) "
    r"(?P<what>(?!.*\b(?:for|in|on|per|as|to|at|with|from|of|into)\b)\S+(?: \S+){0,3})$",
    re.IGNORECASE,
)
# Words that end the name of what a choice was for: "planning our team offsite for Q3" -> "team offsite".
_TOPIC_STOP = (
    r"(?:for|at|with|in|on|by|to|and|or|vs|versus|but|so|that|which|because|today|tomorrow|tonight|this|next|now|"
    r"finally|yet|again|i|we|you|it|is|are|should|would|could|make|makes|do|does|did|can|will)"
)
_TOPIC_WORDS = rf"(?P<topic>(?:(?!{_TOPIC_STOP}\b)[a-z][\w'’-]*)(?: (?!{_TOPIC_STOP}\b)[a-z][\w'’-]*){{0,3}})"
# Where a session names what the user is choosing for: "for photo uploads on the bakery's ordering site:
# presigned S3 urls or proxy ...?", "Planning our team offsite for Q3", "I'm planning a usability study",
# "we're launching a fall tasting menu", "we need a feature store for the churn model" (writers K, L, O and the
# in-style dev half). The question's own noun ("which crate?", "what allocation makes sense?") names what was
# chosen, not what for, and is not read.
_TOPICS = (
    re.compile(r"\bfor (?P<topic>(?:the |my |our )?[\w'’ -]{3,60}?)\s*:", re.IGNORECASE),
    re.compile(
        rf"\b(?:planning|organi[sz]ing|redoing|redo|launching|setting up) (?:a |an |the |our |my )?{_TOPIC_WORDS}",
        re.IGNORECASE,
    ),
    re.compile(
        rf"\b(?:need|want|looking for|make me|build me) (?:a|an) (?:new )?{_TOPIC_WORDS}(?=\s*(?:for\b|[.,?!:]|$))",
        re.IGNORECASE,
    ),
)
_OWNER = re.compile(r"^(?:the|my|our) ", re.IGNORECASE)


def with_topic(memory: str, said_before: Sequence[str]) -> str:
    """A decision that names only what was chosen, said with what it was for: "The user decided to go with
    Brussels" -> "The user decided to go with Brussels for the team offsite" when the user said "Planning our team
    offsite for Q3". Read alone, "Brussels" is a choice of nothing.

    Args:
        memory: The memory as it would be written.
        said_before: The user's turns up to the one the decision was said in, oldest first; the nearest naming
            a topic is read.
    """
    bare = _BARE_CHOICE.match(memory)
    if bare is None:
        return memory
    for turn in reversed(said_before):
        topics = [m for pattern in _TOPICS for m in pattern.finditer(turn)]
        if not topics:
            continue
        nearest = max(topics, key=lambda m: m.start())
        topic = nearest.group("topic").strip()
        if topic.lower() in bare.group("what").lower():
            return memory
        # "for photo uploads on the site:" is said as the user said it; a plan or a need is "the" one.
        said = _OWNER.sub("the ", topic) if nearest.re is _TOPICS[0] else f"the {_OWNER.sub('', topic)}"
        return f"{bare.group('head')} {bare.group('what')} for {said}"
    return memory
