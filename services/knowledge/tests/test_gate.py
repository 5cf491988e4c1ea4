"""The novelty gate's verdict order and the answer-confidence rule (pure logic)."""

import pytest

from cairn_contracts.knowledge import CREATED_VERDICTS, Verdict
from cairn_knowledge.gate import decide, embedded_text
from cairn_knowledge.service import answer_confidence


class TestDecide:
    @pytest.mark.parametrize(
        ("same_body", "same_title", "nearest", "verdict"),
        [
            (True, True, 1.0, Verdict.duplicate),  # an exact body wins over everything
            (False, True, 1.0, Verdict.deduplicated),  # then the title in the visibility scope
            (False, False, 0.92, Verdict.gated_to_draft),  # the threshold itself gates
            (False, False, 0.9199, Verdict.created),  # just below it does not
            (False, False, None, Verdict.created),  # nothing visible to compare with
        ],
    )
    def test_verdict_order(
        self, same_body: bool, same_title: bool, nearest: float | None, verdict: Verdict
    ) -> None:
        assert (
            decide(same_body=same_body, same_title=same_title, nearest_similarity=nearest, threshold=0.92)
            == verdict
        )

    def test_only_created_and_gated_create_an_article(self) -> None:
        assert {Verdict.created, Verdict.gated_to_draft} == CREATED_VERDICTS

    def test_the_embedded_text_is_title_then_body(self) -> None:
        assert embedded_text("T", "B") == "T\n\nB"


class TestAnswerConfidence:
    def test_nothing_returned_is_none(self) -> None:
        assert answer_confidence([]) == "none"

    def test_a_clearly_separated_top_is_an_answer(self) -> None:
        assert answer_confidence([0.91, 0.31, 0.28, 0.22]) == "answer"

    def test_a_flat_band_is_weak_whatever_its_level(self) -> None:
        assert answer_confidence([0.62, 0.6, 0.58, 0.55]) == "weak"  # high but not separated
        assert answer_confidence([0.2, 0.17, 0.1, 0.05]) == "weak"

    def test_separation_is_relative_not_a_floor(self) -> None:
        assert answer_confidence([0.4, 0.1, 0.09, 0.08]) == "answer"  # low scores, clear separation

    def test_too_few_or_unscored_rows_are_weak(self) -> None:
        assert answer_confidence([0.9]) == "weak"
        assert answer_confidence([0.9, 0.1]) == "weak"
        assert answer_confidence([None, None, None]) == "weak"

    def test_ties_at_the_top_are_weak(self) -> None:
        assert answer_confidence([0.8, 0.8, 0.1]) == "weak"
