"""What the user only guesses is not a fact about them.

Runs on a memory as it would be written, after the decision kept its clause. "The user thinks it clashes
with the scrub job", "The user suspects the clocks changing may have confused it", "The user bets it's
timezone": a guess about this session's problem, or a view the user does not commit to. The decision sees
the hedge ("i think" is one of its penalties) but keeps such clauses when the rest reads like a fact. No
labelled set has a memory opening with the user's guess as a fact; a preference is said with its own verb
("prefers", "likes") and stays.
"""

import re

from cairn_promotion.asks import DATED_USER

_GUESS = re.compile(
    rf"{DATED_USER}(?:thinks|suspects|bets|guesses|reckons|supposes|figures|assumes|imagines)\b",
    re.IGNORECASE,
)


def is_guess(memory: str) -> bool:
    """Whether a memory states only what the user guesses or believes ("The user thinks ...")."""
    return _GUESS.match(memory) is not None
