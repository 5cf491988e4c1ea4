"""A setting's change said as an event is remembered as the value it leaves, in the slot of the old value."""

import pytest

from cairn_contracts.promotion import Turn
from cairn_promotion.learned import load_default_decision
from cairn_promotion.offline import UPDATE_CONFIDENCE, OfflineCompiler
from cairn_promotion.slots import slot_of
from cairn_promotion.updates import as_state, is_former


@pytest.mark.parametrize(
    ("memory", "state"),
    [
        ("The user's team moved the standup to 10:00", "The standup is at 10:00"),
        ("The user's team moved the standup to 10:00 starting next week", "The standup is at 10:00"),
        ("The user's team moved the 1:1 to Thursdays at 15:00", "The 1:1 is on Thursdays at 15:00"),
        ("The user moved the retro to 3pm", "The user's retro is at 3pm"),
        ("The user raised the dose to 100mg last month", "The user's dose is 100mg"),
        (
            "On 2025-01-29, the user bumped the contribution to $600 a month starting this year",
            "The user's contribution is $600 a month",
        ),
        # Not a setting's value: left as it was.
        ("The user's team moved the files to S3", "The user's team moved the files to S3"),
        ("The user moved the meeting to next Tuesday", "The user moved the meeting to next Tuesday"),
        # A move to a known place is a new home; to anything else (a tool, a service) it keeps its words.
        ("The user moved to Lisbon last month", "The user lives in Lisbon"),
        ("On 2025-06-02, the user moved to the Netherlands in 2023", "The user lives in the Netherlands"),
        ("The user's sister Ana moved to Porto", "The user's sister Ana lives in Porto"),
        ("The user finally moved from Leeds to Utrecht", "The user lives in Utrecht"),
        (
            "The user's team moved from Jenkins to GitHub Actions",
            "The user's team moved from Jenkins to GitHub Actions",
        ),
        ("The user moved to Zotero last autumn", "The user moved to Zotero last autumn"),
        ("The user moved to R last year", "The user moved to R last year"),
        (
            "The user relocated to Berlin for a job at Zalando",
            "The user relocated to Berlin for a job at Zalando",
        ),
    ],
)
def test_a_change_becomes_the_value_it_leaves(memory: str, state: str) -> None:
    assert as_state(memory) == state


def test_the_new_value_takes_the_old_values_slot() -> None:
    assert slot_of(as_state("The user's team moved the standup to 10:00")) == slot_of(
        "The standup is at 09:30 every weekday"
    )


def test_the_compiler_writes_the_value() -> None:
    turns = [Turn(role="user", content="Quick update: we moved the standup to 10:00.")]
    assert [c.text for c in OfflineCompiler(load_default_decision()).extract(turns)] == [
        "The standup is at 10:00"
    ]


def test_a_move_home_supersedes_where_the_user_lived() -> None:
    assert slot_of(as_state("The user moved to Lisbon last month")) == slot_of("The user lives in Berlin")
    assert slot_of(as_state("The user's sister moved to Porto")) == slot_of(
        "The user's sister lives in Braga"
    )


def test_a_new_tool_is_not_a_new_home() -> None:
    # Said the same way as a move, "moved to Zotero" must not supersede where the user lives.
    assert slot_of("The user moved to Zotero last autumn") != "user|residence"
    assert slot_of("The user's sister moved to Notion") is None
    assert slot_of("The user moved to New York in May") == "user|residence"


def test_a_move_home_is_kept_though_its_wording_reads_as_an_event() -> None:
    # The decision alone scores "I moved to Lisbon last month" under the gate (0.56): the state is kept.
    turns = [Turn(role="user", content="I moved to Lisbon last month.")]
    [memory] = OfflineCompiler(load_default_decision()).extract(turns)
    assert (memory.text, memory.slot) == ("The user lives in Lisbon", "user|residence")
    assert memory.confidence >= UPDATE_CONFIDENCE


@pytest.mark.parametrize(
    ("memory", "former"),
    [
        ("The user used to live in Leeds", True),
        ("On 2025-06-10, the user used to run it with a colleague", True),
        ("The user's team used to run everything in SPSS", True),
        # A plan the user meant and has not kept to (writer N).
        ("The user was going to open a Lifetime ISA too", True),
        ("The user had thought to bake a Victoria sponge from a very old recipe card", True),
        # Said in passing beside the value that holds now, or a current fact: kept.
        ("The on-call handover moved to Mondays 10:00 (it used to be Fridays)", False),
        ("The user no longer eats meat", False),
        ("The user is used to early shifts", False),
        ("The user is going to Lisbon every summer", False),
        # A home left, the new one said elsewhere; not a tool left.
        ("The user moved from Berlin last year", True),
        ("The user moved from Jenkins last year", False),
        ("The user moved from Berlin to Lisbon for a job at Feedzai", False),
    ],
)
def test_what_the_user_used_to_do_is_not_remembered(memory: str, former: bool) -> None:
    assert is_former(memory) is former


def test_the_compiler_keeps_the_new_home_not_the_old_one() -> None:
    turns = [Turn(role="user", content="I used to live in Leeds. I moved to York in May.")]
    assert [c.text for c in OfflineCompiler(load_default_decision()).extract(turns)] == [
        "The user lives in York"
    ]
