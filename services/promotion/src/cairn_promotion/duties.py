"""Who does what: a role the user holds ("The user is the Datadog admin for the org") or a duty a named colleague
has ("Tomasz Wiśniewski reviews anything that touches storage").

Both are what the user's team and the writers label as lasting, yet the learned decision scores them low when
they are said without a cue it was trained on (0.39-0.55 on the outside and in-style sets, every one labelled):
"the office manager at a dental practice" reads to it like a passing remark. A memory of either shape is kept at
the names' confidence, as an allergy is (`introductions.states_an_allergy`); the decision still decides whether
the clause is a fact at all, so "I'm the worst admin ever" never became such a memory.
"""

import re

_ROLE = (
    r"admin|administrator|owner|caregiver|manager|maintainer|coordinator|treasurer|organi[sz]er|secretary|"
    r"chair|captain|coach|editor|founder|co-?founder|point of contact"
)
# "The user is the office manager at a dental practice", "The user is the Datadog admin for the org".
_HOLDS_A_ROLE = re.compile(
    rf"^(?:on [\d-]+, )?the user is (?:the|a|an) (?:(?:primary|main|only|sole)\s+)?(?:[\w'’&.-]+\s+){{0,3}}?"
    rf"(?:{_ROLE})(?:\s+(?:for|at|of|on|in)\s+\S.*)?$",
    re.IGNORECASE,
)
# "Kofi Mensah signs off every release", "Ayşe Demir runs all the playtests": a full name and what they always do.
_NAMED_DUTY = re.compile(
    r"^(?:on [\d-]+, )?(?-i:[A-Z][\w'’-]+(?:\s+[A-Z][\w'’-]+)+)\s+"
    r"(?:reviews|owns|approves|signs\s+off(?:\s+on)?|maintains|runs|handles)\s+"
    r"(?:all|every|any|anything|everything)\b",
    re.IGNORECASE,
)


def states_a_duty(memory: str) -> bool:
    """Whether a memory is a role the user holds or a duty a named person always has."""
    return _HOLDS_A_ROLE.match(memory) is not None or _NAMED_DUTY.match(memory) is not None
