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


@pytest.mark.parametrize(
    ("question", "turn", "facts"),
    [
        # Writers C and Q, and instyle dev.
        (
            "Who is your provider, and have you restarted the router?",
            "Vodafone. yes, twice",
            ["The user's provider is Vodafone"],
        ),
        ("What router do you have?", "FRITZ!Box 7590.", ["The user's router is FRITZ!Box 7590"]),
        (
            "Which database do you use, and what is the backend stack?",
            "postgres 16",
            ["The user's database is postgres 16"],
        ),
        ("How often do you file VAT?", "quarterly", ["The user files VAT quarterly"]),
        ("How often do you run?", "3x a week", ["The user runs 3x a week"]),
        ("How often do you water it?", "every 2 days", []),  # "it" is in the question alone
        # Two questions, two answers in one sentence, in order.
        (
            "Who's your ISP and what modem do you have?",
            "comcast, arris sb8200. it keeps dropping",
            [
                "The user's ISP is comcast",
                "The user's modem is arris sb8200",
            ],
        ),
        # A credential, a second answer that is a statement, or a question of another shape.
        ("What password do you use?", "hunter2", []),
        ("Who's your ISP and what modem do you have?", "comcast, it is an old one", []),
        ("Which model is it?", "Brother HL-L2350DW", []),
    ],
)
def test_more_question_shapes_name_the_users_attribute(question: str, turn: str, facts: list[str]) -> None:
    first_clause = turn.split(".")[0].split(",")[0]
    assert answered(question, first_clause, turn) == facts
