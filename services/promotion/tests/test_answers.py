"""A short answer to the assistant's question about the user is the fact the question names."""

import pytest

from cairn_contracts.promotion import Turn
from cairn_promotion.answers import answered
from cairn_promotion.compiler import DEFAULT_CONFIDENCE_THRESHOLD
from cairn_promotion.learned import load_default_decision
from cairn_promotion.offline import OfflineCompiler


@pytest.mark.parametrize(
    ("question", "answer", "facts"),
    [
        # Writers Q and AD.
        (
            "Make sure the doctor knows. Are you on other meds?",
            "sertraline 50mg",
            ["The user takes sertraline 50mg"],
        ),
        ("Common issue. Do you use a CGM?", "dexcom g7", ["The user uses dexcom g7"]),
        (
            "What's your Miles&Smiles number?",
            "TK 318442907",
            ["The user's Miles&Smiles number is TK 318442907"],
        ),
        # A credential is never asked for here; no value, a question back or a statement is not an answer.
        ("What's your password?", "hunter2", []),
        ("What's your PIN?", "4821", []),
        ("Do you use a CGM?", "yes", []),
        ("Do you use a CGM?", "not yet, why?", []),
        ("What's your MSRV?", "MSRV is 1.74", []),
        ("Want a list?", "maybe later", []),
        ("What's your budget?", "somewhere between forty and fifty thousand or so", []),
    ],
)
def test_a_short_answer_states_the_fact_the_question_names(
    question: str, answer: str, facts: list[str]
) -> None:
    assert answered(question, answer) == facts


def test_the_answer_survives_only_after_the_assistants_question() -> None:
    decision = load_default_decision()
    assert decision is not None
    compiler = OfflineCompiler(decision)
    turns = [
        Turn(role="user", content="Doctor wants me on amoxicillin but I'm allergic to penicillin."),
        Turn(role="assistant", content="Make sure the doctor knows. Are you on other meds?"),
        Turn(role="user", content="sertraline 50mg"),
    ]
    found = {c.text: c for c in compiler.extract(turns)}
    assert found["The user takes sertraline 50mg"].confidence >= DEFAULT_CONFIDENCE_THRESHOLD
    # The same words with no question before them are no fact.
    alone = [Turn(role="user", content="sertraline 50mg")]
    assert "The user takes sertraline 50mg" not in {c.text for c in compiler.extract(alone)}


def test_an_answer_the_turn_takes_back_is_not_read() -> None:
    turn = "258, oh wait I retested yesterday, it's 265 W now. weekdays I train on Zwift"
    assert answered("Big goal. What's your FTP?", "258", turn) == []
    assert answered("What's your FTP?", "265 W", "265 W. weekdays I train on Zwift") == [
        "The user's FTP is 265 W"
    ]


@pytest.mark.parametrize(
    ("question", "turn", "facts"),
    [
        # instyle dev: the clause has lost its "yes" ("always."), the turn still says it.
        (
            "Thanks for telling me. Want carb counts with recipes?",
            "yes always. and my sugar's been a bit high this morning",
            ["The user always wants carb counts with recipes"],
        ),
        ("Would you like metric units?", "yeah, from now on", ["The user always wants metric units"]),
        # A bare yes accepts this one offer; an offer of the assistant's doing, or of a credential, is no wish.
        ("Want recipes that fit?", "yes", []),
        ("Want me to send a shorter version?", "yes always", []),
        ("Want your password saved in the note?", "yes always", []),
    ],
)
def test_a_yes_said_to_last_makes_the_offer_a_standing_wish(
    question: str, turn: str, facts: list[str]
) -> None:
    first_clause = turn.split(".")[0].removeprefix("yes ").removeprefix("yeah, ")
    assert answered(question, first_clause, turn) == facts
