"""A decision the user made is kept when it says what was decided, though the decision scores it low."""

import pytest

from cairn_promotion.decisions import states_a_decision, with_topic


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


@pytest.mark.parametrize(
    ("memory", "said_before", "written"),
    [
        # What the choice was for, named by the plan, the need or a "for ...:" question (writers K, L, O and the
        # in-style dev half).
        (
            "The user decided to go with Brussels",
            [
                "Planning our team offsite for Q3. Budget is £9,000 total.",
                "Honestly yeah, let's go with Brussels.",
            ],
            "The user decided to go with Brussels for the team offsite",
        ),
        (
            "The user decided to go with 7 courses",
            ["We're launching a fall tasting menu at my restaurant. Should I do 5 or 7 courses?"],
            "The user decided to go with 7 courses for the fall tasting menu",
        ),
        (
            "The user decided to go with Feast + Redis online",
            ["we need a feature store for the churn model. shortlist is Feast vs Tecton"],
            "The user decided to go with Feast + Redis online for the feature store",
        ),
        (
            "The user decided to go with presigned uploads",
            ["ok so for photo uploads on the bakery's ordering site: presigned S3 urls or proxy?"],
            "The user decided to go with presigned uploads for photo uploads on the bakery's ordering site",
        ),
        # The nearest turn that names a topic is read.
        (
            "The user decided to go with SUS",
            ["We're organising the team offsite", "Different thing: I'm planning a usability study"],
            "The user decided to go with SUS for the usability study",
        ),
        # Nothing named, a choice that says what for, a topic it already holds, a question's own noun: as said.
        ("The user decided to go with Karpenter", ["we have a change freeze every December"], None),
        ("The user decided to go with splitting state per environment", ["Planning our migration"], None),
        ("The user decided to go with the kitchen plan", ["we're redoing the kitchen plan"], None),
        ("The user decided to go with owo-colors", ["want colored output, which crate?"], None),
        ("The user prefers Brussels", ["Planning our team offsite"], None),
    ],
)
def test_a_bare_choice_says_what_it_was_for(memory: str, said_before: list[str], written: str | None) -> None:
    assert with_topic(memory, said_before) == (written or memory)
