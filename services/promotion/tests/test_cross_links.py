"""Promotion's cross links keep only articles the compiling subject can see."""

from cairn_contracts.promotion import Candidate
from cairn_promotion.activities import keep_visible


def test_only_visible_articles_survive_on_every_candidate() -> None:
    candidates = [
        Candidate(text="a", confidence=0.9, cross_links=["seen", "foreign", "seen"]),
        Candidate(text="b", confidence=0.9, cross_links=["fabricated"]),
        Candidate(text="c", confidence=0.9),
    ]
    kept = keep_visible(candidates, {"seen"})
    assert [c.cross_links for c in kept] == [["seen", "seen"], [], []]
    assert [c.text for c in kept] == ["a", "b", "c"]


def test_nothing_visible_strips_everything() -> None:
    kept = keep_visible([Candidate(text="a", confidence=0.9, cross_links=["x"])], set())
    assert kept[0].cross_links == []
