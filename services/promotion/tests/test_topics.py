"""A choice or a plan's value that names nothing it is for is said with what the session said it is for."""

import pytest

from cairn_promotion.topics import with_topic


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
        # The question the choice answers: what makes sense, or what to do with the user's own (writers F and O).
        (
            "The user decided to go with 80/20",
            [
                "My retirement account is with Fidelity and I put in $500 a month. What allocation makes sense?"
            ],
            "The user decided to go with 80/20 for the allocation",
        ),
        (
            "The user decided to go with overpaying £300/month",
            ["anyway should I overpay my mortgage? it's fixed at 4.29% until 2027."],
            "The user decided to go with overpaying £300/month for the mortgage",
        ),
        # Nothing named, a choice that says what for, a topic it already holds, a question's own noun: as said.
        ("The user decided to go with Karpenter", ["we have a change freeze every December"], None),
        ("The user decided to go with splitting state per environment", ["Planning our migration"], None),
        ("The user decided to go with the kitchen plan", ["we're redoing the kitchen plan"], None),
        ("The user decided to go with owo-colors", ["want colored output, which crate?"], None),
        ("The user decided to go with the galley layout", ["which layouts work in a narrow room?"], None),
        ("The user prefers Brussels", ["Planning our team offsite"], None),
        # A plan's value said with its key alone says what for after the key (writers B, L and O).
        (
            "Total budget is £25k",
            [
                "We're renovating our kitchen and I need a budget breakdown. Total budget is £20k.",
                "raised it to £25k",
            ],
            "Total budget for the kitchen is £25k",
        ),
        (
            "Date is 2025-09-20, Oaxaca, budget $18k all in",
            ["wedding planning help. date is 2025-09-20, Oaxaca, budget $18k all in."],
            "Date for the wedding is 2025-09-20, Oaxaca, budget $18k all in",
        ),
        (
            "On 2025-04-01, the budget is £9,000",
            ["Planning our team offsite for Q3. Budget is £9,000 total."],
            "On 2025-04-01, the budget for the team offsite is £9,000",
        ),
        # A value that says what for, what someone else wants, and a saving goal: as said.
        ("The wedding budget is £18,000", ["we're planning the wedding"], None),
        ("The budget is £18,000", ["Sam's parents really want a church ceremony, but we don't"], None),
        ("Target is £40,000 by the end of 2027", ["I'm saving for a house deposit, target is £40,000"], None),
    ],
)
def test_a_bare_choice_says_what_it_was_for(memory: str, said_before: list[str], written: str | None) -> None:
    assert with_topic(memory, said_before) == (written or memory)
