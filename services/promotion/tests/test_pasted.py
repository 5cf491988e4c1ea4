"""Machine output pasted into the chat is not a memory; a setting said in words is."""

from collections.abc import Callable

import pytest

from cairn_contracts.promotion import Turn
from cairn_promotion.offline import session_clauses
from cairn_promotion.pasted import is_pasted_output


@pytest.mark.parametrize(
    "memory",
    [
        # Code and a tool's error pasted in (LongMemEval).
        "Const telEvents = [",
        "Id2word = Dictionary(clean\\_tweets\\_df['tokens'])",
        "Undefined function 'eval_lambdas' for input arguments of type 'double'",
        'If (e.key === "Tab" && e.shiftKey) {',
        "5.0 out of 5 stars Not just for boys",
        "CALCIUM DISODIUM EDTA ADDED AS A PRESERVATIVE",
        "Reviewed in the United States on March 9, 2023",
        # Writers C, F, I, L, V.
        "`kubelet[2231]: E0211 09:14:02.118 eviction_manager.go:350] eviction manager",
        "Unable to create VM - storage local-lvm not available'",
        "CI pe build fail ho raha hai since morning: 'Cannot find module @/utils/format'",
        "On 2025-03-26, NotAfter=Mar 27 23:59:59 2025 GMT",
        "It compares invoice.due_date to datetime.now().date() + timedelta(days=30)",
        "The job dies with a KeyError on the second row",
        "Traceback shows it fails in the serializer",
        # A line of code pasted without a fence (writers K and N).
        'Sheets("Report").Cells(r, 2).Value = rs!Hours',
        'Set rs = conn.Execute("SELECT * FROM TimeEntries")',
        "r = r + 1",
        "The formula in the cell is =B4+C4+D4",
        # A reference copied from a bibliography (writers B and J).
        "[1] Hughes TP et al. (2017) Global warming and recurrent mass bleaching of corals",
        "Smith J, Lee K, 2021, Social media and sleep, Journal of Adolescent Health vol 68 p 45-52",
        # A recipe copied in (writers A, E and N).
        "4 cups flour, 2 tsp baking soda, 1 tsp salt, 1 cup butter",
        "The user has got a recipe that calls for 250 g of butter and 2 cups of flour",
    ],
)
def test_machine_output_is_not_a_memory(memory: str) -> None:
    assert is_pasted_output(memory)


@pytest.mark.parametrize(
    "memory",
    [
        "The user's analytics subnet is 10.40.8.0/24",
        "The user's API is served at api.tallyfox.io",
        "The user likes using anyhow for errors in binaries and thiserror in libraries",
        "The user's backups run nightly at 02:30",
        "The user's project uses Node 20",
        "The user's error budget is 99.9% over 30 days",
        "The user's survey items are 5-point Likert, n=412",
        "The user takes 2 tbsp of chia seeds every morning",
        "The Chen et al. 2021 paper found a 23% drop in nitrogen fixation under drought",
        # Capitals the user typed, or an acronym's (not a label copied in).
        "The user is ALLERGIC TO PENICILLIN AND SULFA DRUGS",
        "It's WordPress VIP on PHP 8.2",
    ],
)
def test_a_setting_said_in_words_stays(memory: str) -> None:
    assert not is_pasted_output(memory)


def test_a_pasted_log_line_is_not_promoted(memory_of: Callable[[str], str | None]) -> None:
    assert memory_of("kubelet[2231]: E0211 09:14:02.118 eviction_manager.go:350] eviction manager") is None


def _clauses(turn: str) -> list[str]:
    return [clause.text for clause, _ in session_clauses([Turn(role="user", content=turn)])]


def test_an_export_from_a_tool_is_data_but_a_dated_line_is_read() -> None:
    rows = [
        f"19/02/2023 02:{minute} Kyson Terry kyson@mobius.example ticketing-system status Car bugs #pol-{minute} closed"
        for minute in (27, 37, 56)
    ]
    # Three rows opening on a date and a clock are a table exported from a tool (LongMemEval).
    assert _clauses("\n".join(["Group these by hour.", *rows])) == []
    # So are three headers of a chat log.
    chat = [
        "Sarmad Khan 5:19 AM",
        "Thanks for connecting!",
        "Jo Peninsulas 5:28 PM",
        "Happy to.",
        "Sarmad Khan 1:36 AM",
    ]
    assert _clauses("\n".join(chat)) == []
    # One line of a chat log's own words is enough.
    linkedin = [
        "act as jo:",
        "Jo Peninsulas sent the following message at 4:27 PM",
        "Hey Chinedu, keen to connect.",
    ]
    assert _clauses("\n".join(linkedin)) == []
    assert _clauses("View Jo’s profileJo Peninsulas\nI'm working with Rotary International.") == []
    # Fewer are the user's own dated notes.
    assert len(_clauses("\n".join(["I work in support at Mobius.", *rows[:2]]))) > 1
