"""How the user does a kind of work, and with what, is kept though the decision scores it low."""

import pytest

from cairn_contracts.promotion import Turn
from cairn_promotion.compiler import DEFAULT_CONFIDENCE_THRESHOLD
from cairn_promotion.habits import states_a_tool_habit
from cairn_promotion.learned import load_default_decision
from cairn_promotion.offline import OfflineCompiler


@pytest.mark.parametrize(
    ("memory", "habit"),
    [
        # Writers J and X (0.34 and 0.51 from the decision), and what the outside writers label alike.
        ("The user plans everything in Notion", True),
        ("The user edits everything in vim", True),
        ("The user does the user's bookkeeping in FreeAgent", True),
        ("The user keeps all the user's refs in Zotero", True),
        ("On 2025-03-02, the user's team runs everything on Graviton in prod", True),
        ("The user edits everything with Helix", True),
        # Company, a pointer, or no kind of work.
        ("The user does everything with the kids", False),
        ("The user tracks the user's sleep with it every night", False),
        ("The user runs to the shop", False),
        ("The user plans to move to Notion", False),
    ],
)
def test_a_tool_habit_is_read(memory: str, habit: bool) -> None:
    assert states_a_tool_habit(memory) is habit


def test_a_tool_habit_passes_the_gate() -> None:
    decision = load_default_decision()
    assert decision is not None
    found = OfflineCompiler(decision).extract([Turn(role="user", content="I plan everything in Notion.")])
    assert [(c.text, c.confidence >= DEFAULT_CONFIDENCE_THRESHOLD) for c in found] == [
        ("The user plans everything in Notion", True)
    ]
