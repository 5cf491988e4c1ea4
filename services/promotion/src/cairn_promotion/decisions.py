"""A decision the user made, said with what was decided: "The user decided to go with the galley layout".

The writers label every such decision as lasting (the brief: "a decision the user explicitly agrees to IS
durable"), and kept ones match a label 70 times in 87 on the outside and in-style sets; yet the learned decision
scores some low where the clause was a bare "going with X" or "let's do X" (0.32-0.59, all ten labelled). A
memory of this shape is kept at the names' confidence, unless what was decided is only a pronoun ("The user
decided to go with that") or nothing at all ("The user's team has decided"): that says what, only in the turn.
"""

import re

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
