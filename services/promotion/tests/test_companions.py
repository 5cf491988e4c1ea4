"""Who does something with the user stays in the memory: "my flatmate Jonas and I split utilities 50/50"."""

import pytest

from cairn_contracts.promotion import Turn
from cairn_promotion.companions import companion_of, with_companion
from cairn_promotion.learned import LearnedDecision, load_default_decision
from cairn_promotion.offline import OfflineCompiler
from cairn_promotion.text import Clause


def _clauses(before: str, after: str, turn_index: int = 0) -> tuple[Clause, Clause]:
    return Clause(before, before, "user", position=0), Clause(
        after, after, "user", turn_index=turn_index, position=1
    )


@pytest.mark.parametrize(
    ("before", "after", "companion"),
    [
        ("my flatmate Jonas", "I split utilities 50/50", "the user's flatmate Jonas"),
        ("Chris", "I broke up in March", "Chris"),
        ("my wife", "I both work from home", "the user's wife"),
        ("my fiancée Priyanka", "I'm getting married in June", "the user's fiancée Priyanka"),
        ("my wife Priya", "our nanny have member access", "the user's wife Priya"),
        # Not someone of the user's or a name: the clause keeps its own subject.
        ("the migration", "I spent the night together", None),
        ("my new laptop", "I get along fine", None),
    ],
)
def test_the_person_before_and_i_is_the_companion(before: str, after: str, companion: str | None) -> None:
    first, second = _clauses(before, after)
    assert companion_of(second, first, f"{before} and {after}") == companion


def test_clauses_not_joined_by_and_share_no_subject() -> None:
    first, second = _clauses("my wife", "I cook")
    assert companion_of(second, first, "my wife. I cook") is None


def test_a_clause_of_another_turn_is_no_companion() -> None:
    first, second = _clauses("Chris", "I broke up in March", turn_index=1)
    assert companion_of(second, first, "Chris and I broke up in March") is None


@pytest.mark.parametrize(
    ("memory", "companion", "shared"),
    [
        (
            "The user split utilities 50/50",
            "the user's flatmate Jonas",
            "The user and the user's flatmate Jonas split utilities 50/50",
        ),
        ("The user is getting married in June", "Sam", "The user and Sam are getting married in June"),
        (
            "The user both works from home",
            "the user's wife",
            "The user and the user's wife both work from home",
        ),
        ("The user shares a flat in Leith", "Kwame", "The user and Kwame share a flat in Leith"),
        ("The user has a greyhound", "Dev", "The user and Dev have a greyhound"),
        ("The user watches Bake Off", "Ana", "The user and Ana watch Bake Off"),
        ("The user tries every new ramen place", "Ana", "The user and Ana try every new ramen place"),
        (
            "On 2025-01-19, the user is moving in May",
            "Marco",
            "On 2025-01-19, the user and Marco are moving in May",
        ),
        # Someone else of the user's leads the memory: named after the companion, the verb as said.
        (
            "The nanny have member access",
            "the user's wife Priya",
            "The user's wife Priya and the nanny have member access",
        ),
        (
            "On 2025-01-02, the user's son have keys",
            "the user's wife",
            "On 2025-01-02, the user's wife and the user's son have keys",
        ),
    ],
)
def test_the_memory_names_both_and_the_verb_is_plural(memory: str, companion: str, shared: str) -> None:
    assert with_companion(memory, companion) == shared


def test_the_compiled_memory_names_who_shares_it() -> None:
    decision: LearnedDecision | None = load_default_decision()
    assert decision is not None
    turns = [Turn(role="user", content="my flatmate Jonas and I split utilities 50/50, he pays electricity")]
    texts = [c.text for c in OfflineCompiler(decision).extract(turns)]
    assert "The user and the user's flatmate Jonas split utilities 50/50" in texts
    assert "The user split utilities 50/50" not in texts
