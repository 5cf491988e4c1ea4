"""What the user's clinician told them to do or avoid is kept though the decision scores it low."""

import pytest

from cairn_contracts.promotion import Turn
from cairn_promotion.care_advice import states_a_clinicians_rule
from cairn_promotion.compiler import DEFAULT_CONFIDENCE_THRESHOLD
from cairn_promotion.learned import load_default_decision
from cairn_promotion.offline import OfflineCompiler


@pytest.mark.parametrize(
    ("memory", "rule"),
    [
        # Writers L and AA, and the in-style writer AF (0.42-0.57 from the decision).
        ("The user's physio says the user should avoid downhill running", True),
        ("The user's physio says the user needs to do the user's knee exercises", True),
        ("The user's physio said no hill sprints until she clears the user", True),
        ("The user's physio wants the user to avoid running until she clears the user", True),
        ("On 2025-03-02, the user's GP told the user to cut salt", True),
        ("The user's physio Claire says no running on consecutive days", True),
        # A vague report, a task for the user's boss, or what the clinician is.
        ("The user's physio Marco said something about the IT band last year", False),
        ("The user's boss wants the user to send a polite no to a vendor", False),
        ("The user's physio is Gwen Pritchard", False),
        ("The user's doctor says it looks fine", False),
    ],
)
def test_a_clinicians_rule_is_read(memory: str, rule: bool) -> None:
    assert states_a_clinicians_rule(memory) is rule


def test_a_clinicians_rule_passes_the_gate() -> None:
    decision = load_default_decision()
    assert decision is not None
    turns = [
        Turn(
            role="user", content="Also, my physio says I should avoid downhill running, so keep that in mind"
        )
    ]
    found = OfflineCompiler(decision).extract(turns)
    assert [(c.text, c.confidence >= DEFAULT_CONFIDENCE_THRESHOLD) for c in found] == [
        ("The user's physio says the user should avoid downhill running", True)
    ]
