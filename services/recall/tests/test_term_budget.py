"""The bounded keyword candidates of a large subject: which query terms' rows are read."""

from cairn_storage.fulltext import rarest_first


def test_rarest_terms_are_taken_until_their_rows_would_exceed_the_budget() -> None:
    df = {"violin": 3, "invoic": 400, "user": 9000, "day": 700}
    assert rarest_first(["user", "violin", "invoic", "day"], df, 1000) == ["violin", "invoic"]


def test_the_rarest_term_is_kept_even_past_the_budget() -> None:
    assert rarest_first(["user", "day"], {"user": 9000, "day": 7000}, 1000) == ["day"]


def test_terms_the_subject_never_uses_are_left_out() -> None:
    assert rarest_first(["zzz", "violin"], {"violin": 2}, 1000) == ["violin"]
    assert rarest_first(["zzz"], {}, 1000) == []


def test_ties_break_by_lexeme_so_the_choice_is_deterministic() -> None:
    assert rarest_first(["b", "a"], {"a": 600, "b": 600}, 1000) == ["a"]
