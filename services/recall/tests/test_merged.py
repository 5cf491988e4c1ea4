"""Merged recall's pure parts: the deterministic cross-source order, ranks, the cap and token estimates."""

from datetime import UTC, datetime

from cairn_contracts.knowledge import KnowledgeHit
from cairn_contracts.memory import Memory, Source
from cairn_contracts.recall import RecallHit
from cairn_recall.merged import merge, tokens_estimate


def memory_hit(memory_id: str, score: float | None, text: str = "a memory") -> RecallHit:
    memory = Memory(
        id=memory_id,
        text=text,
        source=Source.explicit,
        confidence=1.0,
        tags=[],
        metadata={},
        project_id=None,
        source_session_id=None,
        superseded_by=None,
        embedding_status="ready",
        recall_count=3,
        last_recalled_at=None,
        created_at=datetime(2026, 1, 1, tzinfo=UTC),
    )
    return RecallHit(memory=memory, score=score, selection_reason="semantic")


def article_hit(article_id: str, score: float | None) -> KnowledgeHit:
    return KnowledgeHit(
        id=article_id,
        title="T",
        category=None,
        tags=[],
        score=score,
        snippet="s",
        selection_reason="semantic",
    )


class TestMerge:
    def test_score_desc_then_knowledge_first_then_id(self) -> None:
        data, _ = merge(
            [memory_hit("m2", 0.5), memory_hit("m1", 0.5), memory_hit("m0", 0.9)],
            [article_hit("k2", 0.5), article_hit("k1", 0.5)],
            10,
        )
        assert [i.id for i in data] == ["m0", "k1", "k2", "m1", "m2"]
        assert [i.rank for i in data] == [1, 2, 3, 4, 5]

    def test_unscored_rows_come_last(self) -> None:
        data, _ = merge([memory_hit("m", None)], [article_hit("k", 0.01), article_hit("u", None)], 10)
        assert [i.id for i in data] == ["k", "u", "m"]

    def test_the_cap_applies_after_sorting_and_tokens_count_every_candidate(self) -> None:
        data, candidates = merge([memory_hit("m", 0.2, "x" * 10)], [article_hit("k", 0.3)], 1)
        assert [i.id for i in data] == ["k"]
        assert candidates == tokens_estimate("x" * 10) + tokens_estimate("T\ns")

    def test_memory_items_carry_no_recall_counters(self) -> None:
        data, _ = merge([memory_hit("m", 0.2)], [], 1)
        assert data[0].memory is not None
        assert "recall_count" not in data[0].memory.model_dump()

    def test_tokens_are_bytes_over_four_rounded_up(self) -> None:
        assert tokens_estimate("") == 0
        assert tokens_estimate("abcd") == 1
        assert tokens_estimate("abcde") == 2
        assert tokens_estimate("é") == 1  # two bytes
