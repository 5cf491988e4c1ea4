"""What the user's clinician told them to do or avoid: "The user's physio says the user should avoid downhill
running", "The user's physio said no hill sprints until she clears the user".

The writers label every such rule as lasting (9 memories of this shape on the outside and in-style sets, all of
them), yet the learned decision scores some low when the clause is worded as what someone said ("my physio says I
should avoid downhill running" 0.57, "my physio said no hill sprints until she clears me" 0.42). A memory of this
shape is kept at the names' confidence, as a duty is (`duties`); the decision still decides whether the clause is a
fact, and a vague report ("said something about the IT band") is not a rule.
"""

import re

from cairn_promotion.lexicon import CLINICIANS

# The lexicon's clinicians, and the words for a doctor or a physio the lexicon's roles leave out.
_CLINICIANS = rf"{CLINICIANS}|doctor|doc|physical therapist|pt|ob|ob-gyn|obgyn"
# What was said is a rule for the user: what they should, must or can't do, or a "no" to something.
_RULE = (
    r"(?:that )?(?:the user (?:should|shouldn't|should not|needs to|must|mustn't|must not|can't|cannot|has to|is to)"
    r"|no)\b"
)
# "The user's physio", "On 2025-03-02, the user's GP", "The user's physio Claire".
_THE_USERS_CLINICIAN = rf"^(?:on [\d-]+, )?the user's (?:{_CLINICIANS})(?: (?-i:[A-Z])[\w.-]+)? "
_CLINICIANS_RULE = re.compile(
    rf"{_THE_USERS_CLINICIAN}(?:says|said|has said|insists|insisted) {_RULE}"
    rf"|{_THE_USERS_CLINICIAN}(?:wants|told|has told|advised|has advised) the user to (?!the\b)\w",
    re.IGNORECASE,
)


def states_a_clinicians_rule(memory: str) -> bool:
    """Whether a memory says what the user's clinician told them to do or avoid ("The user's physio says the user
    should avoid downhill running")."""
    return _CLINICIANS_RULE.match(memory) is not None
