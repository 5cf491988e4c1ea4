"""How the user wants every answer to look is a preference, though it is worded as a request."""

import pytest

from cairn_contracts.promotion import Turn
from cairn_promotion.answer_form import answer_form, answer_form_candidates
from cairn_promotion.compiler import DEFAULT_CONFIDENCE_THRESHOLD
from cairn_promotion.offline import OfflineCompiler


@pytest.mark.parametrize(
    ("clause", "turn", "facts"),
    [
        # Writers I, K, O, S, W.
        ("please keep your replies short", "I read these on my phone", ["The user prefers short replies"]),
        ("keep answers short, bullet points", "", ["The user prefers short answers"]),
        ("please keep the steps simple!", "I'm not very techy", ["The user prefers simple steps"]),
        ("keep your steps short and simple", "", ["The user prefers short and simple steps"]),
        # The message being written, or someone else's messages.
        ("keep it short", "", []),
        ("keep replies to customers short", "", []),
        # A reason of the moment beside it, unless it is said to last.
        ("so keep answers short", "i'm on my phone rn so keep answers short", []),
        (
            "keep answers short in general",
            "and keep answers short in general, I read these on my phone on the train",
            ["The user prefers short answers"],
        ),
        # What every answer leaves out, asked for, said to hold, or the whole request (writers H, I, O, V).
        ("Please no tables in the output, ever.", "", ["The user wants no tables in the output"]),
        (
            "please keep answers short, no bullet points",
            "",
            ["The user prefers short answers without bullet points"],
        ),
        ("no inline comments in the code", "", ["The user wants no inline comments in code"]),
        ("no emojis ever", "", ["The user wants no emojis in answers"]),
        ("the export has no tables in the output", "", []),
        ("there are no headers in that CSV", "", []),
        # How to be contacted (writers O, Q).
        ("please reply by email, not phone", "", ["The user prefers email over phone calls"]),
        ("pls email me not call", "", ["The user prefers email over phone calls"]),
        ("email me the invoice", "", []),
        # A form asked for over another (writers J, S).
        (
            "please give me short diffs rather than full files",
            "",
            ["The user prefers short diffs rather than full files"],
        ),
        ("give me lists as plain checkboxes I can paste", "", ["The user prefers lists as plain checkboxes"]),
        ("give me 3 discussion questions", "", []),
        ("give me the answers as a zip", "", []),
        # For now.
        ("no tables please", "no tables please, I'm on my phone rn", []),
    ],
)
def test_the_form_of_every_answer_is_a_preference(clause: str, turn: str, facts: list[str]) -> None:
    assert answer_form(clause, turn or clause) == facts


def test_a_clause_holding_a_credential_is_not_read() -> None:
    assert (
        answer_form_candidates("keep answers short, token ghp_abcdefghijklmnopqrstuvwxyz0123456789", "") == []
    )


def test_the_preference_survives_the_decision_once() -> None:
    turns = [Turn(role="user", content="Please keep answers short, I read these on break on my phone.")]
    found = {c.text: c for c in OfflineCompiler().extract(turns)}
    assert found["The user prefers short answers"].confidence >= DEFAULT_CONFIDENCE_THRESHOLD
    # Said to last, the decision keeps the user's own words, and the preference is not said twice.
    turns = [Turn(role="user", content="Please always keep answers short.")]
    texts = [c.text for c in OfflineCompiler().extract(turns)]
    assert "The user prefers short answers" not in texts
