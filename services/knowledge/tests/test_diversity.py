"""The diversity selector (pure logic): containment with its floor, exact-fingerprint dedupe, near-duplicate
removal against the selected set, MMR, refills, and order preservation."""

import numpy as np

from cairn_knowledge.diversity import Candidate, Knobs, knobs_from, pool_size, select

KNOBS = Knobs(enabled=True, mmr_lambda=0.7, near_dup_threshold=0.95, over_fetch=3, max_pool=50)


def unit(*values: float) -> np.ndarray:
    v = np.asarray(values, dtype=np.float32)
    return v / np.linalg.norm(v)


def ranked(*specs: tuple[str, np.ndarray | None]) -> list[Candidate]:
    n = len(specs)
    return [Candidate(id=i, relevance=1.0 - k / n, vector=v) for k, (i, v) in enumerate(specs)]


A, A2, B, C, D = unit(1, 0, 0, 0), unit(1, 0.01, 0, 0), unit(0, 1, 0, 0), unit(0, 0, 1, 0), unit(0, 0, 0, 1)


class TestSelect:
    def test_near_copies_never_fill_two_slots_and_the_drop_is_refilled(self) -> None:
        pool = ranked(("a", A), ("a2", A2), ("b", B), ("c", C))
        sel = select(pool, 2, KNOBS)
        assert sel.ids == ["a", "b"]
        assert sel.meta.selected == 2

    def test_a_near_duplicate_picked_by_mmr_is_counted_and_refilled(self) -> None:
        knobs = knobs_from(KNOBS, mmr_lambda=1.0)  # pure relevance: the copy is picked, then dropped
        sel = select(ranked(("a", A), ("a2", A2), ("b", B)), 2, knobs)
        assert sel.ids == ["a", "b"]
        assert sel.meta.dropped_near_duplicates == 1

    def test_lambda_one_without_copies_is_the_plain_top_n(self) -> None:
        knobs = knobs_from(KNOBS, mmr_lambda=1.0)
        sel = select(ranked(("a", A), ("b", B), ("c", C), ("d", D)), 3, knobs)
        assert sel.ids == ["a", "b", "c"]

    def test_selection_keeps_the_pool_order(self) -> None:
        close = unit(0.2, 1, 0, 0)
        sel = select(ranked(("a", A), ("b", B), ("b2", close), ("c", C)), 3, KNOBS)
        assert sel.ids == sorted(sel.ids, key=["a", "b", "b2", "c"].index)

    def test_exact_fingerprints_collapse_to_the_best_ranked(self) -> None:
        pool = ranked(("a", A), ("x", B), ("c", C))
        pool[1].fingerprint = pool[2].fingerprint = "same"
        sel = select(pool, 3, KNOBS)
        assert sel.ids == ["a", "x"]
        assert sel.meta.dropped_exact_duplicates == 1
        assert sel.meta.selected == 2  # the pool could not refill the third slot

    def test_a_missing_fingerprint_is_not_a_fingerprint(self) -> None:
        sel = select(ranked(("a", A), ("b", B)), 2, KNOBS)
        assert sel.meta.dropped_exact_duplicates == 0
        assert sel.ids == ["a", "b"]

    def test_a_candidate_without_a_vector_is_never_dropped(self) -> None:
        sel = select(ranked(("a", A), ("n", None), ("a2", A2)), 2, KNOBS)
        assert sel.ids == ["a", "n"]
        assert sel.meta.vectors_available == 2

    def test_seen_rows_are_dropped_and_refilled_from_unseen(self) -> None:
        pool = ranked(("a", A), ("b", B), ("c", C), ("d", D))
        pool[0].seen = pool[1].seen = True
        sel = select(pool, 2, KNOBS)
        assert sel.ids == ["c", "d"]
        assert (sel.meta.dropped_already_seen, sel.meta.readmitted_already_seen) == (2, 0)

    def test_an_exhausted_pool_readmits_the_best_ranked_repeats(self) -> None:
        pool = ranked(("a", A), ("b", B), ("c", C))
        for c in pool[:2]:
            c.seen = True
        sel = select(pool, 3, KNOBS)
        assert sel.ids == ["a", "b", "c"]
        assert (sel.meta.dropped_already_seen, sel.meta.readmitted_already_seen) == (0, 2)

    def test_readmission_still_refuses_near_copies(self) -> None:
        pool = ranked(("a", A), ("a2", A2), ("b", B))
        pool[0].seen = pool[1].seen = True
        sel = select(pool, 3, KNOBS)
        assert sel.ids == ["a", "b"]
        assert sel.meta.readmitted_already_seen == 1

    def test_the_pinned_answer_is_always_selected(self) -> None:
        sel = select(ranked(("a", A), ("b", B), ("c", C)), 1, KNOBS, pinned="c")
        assert sel.ids == ["c"]

    def test_disabled_is_the_plain_top_n(self) -> None:
        knobs = knobs_from(KNOBS, enabled=False)
        sel = select(ranked(("a", A), ("a2", A2), ("b", B)), 2, knobs)
        assert sel.ids == ["a", "a2"]
        assert sel.meta.enabled is False

    def test_meta_reports_the_knobs_applied(self) -> None:
        sel = select(
            ranked(("a", A)), 1, knobs_from(KNOBS, mmr_lambda=0.5, near_dup_threshold=0.9), mode="reorder"
        )
        assert (sel.meta.mmr_lambda, sel.meta.near_dup_threshold, sel.meta.mode) == (0.5, 0.9, "reorder")
        assert sel.meta.candidates == 1


class TestPoolSize:
    def test_over_fetch_is_bounded_by_the_max_pool(self) -> None:
        assert pool_size(5, KNOBS) == 15
        assert pool_size(30, KNOBS) == 50
        assert pool_size(50, knobs_from(KNOBS, max_pool=20)) == 50  # never below the limit itself
