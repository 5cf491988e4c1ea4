"""A decision the user made is kept when it says what was decided, though the decision scores it low."""

import pytest

from cairn_promotion.decisions import states_a_decision


@pytest.mark.parametrize(
    ("memory", "decision"),
    [
        # Writers F, I, O, T, V and AA.
        ("The user decided to go with the galley layout", True),
        ("The user decided to go with 80/20", True),
        ("The user decided to do the shared Google Calendar", True),
        ("On 2025-06-02, the user decided to set the grocery category to 600 going forward", True),
        ("The user's team decided on blue/green node groups", True),
        # What was decided is only in the turn.
        ("The user decided to go with that", False),
        ("The user's team has decided", False),
        ("The user agreed on that", False),
        # Not a decision of the user's.
        ("The user's manager decided to go with Jira", False),
        ("The user is deciding between Porto and Lisbon", False),
    ],
)
def test_a_decision_that_says_what_is_read(memory: str, decision: bool) -> None:
    assert states_a_decision(memory) is decision
