"""Pure logic of a large subject's postings copy: BM25 as written out by hand, the partition, coverage,
ties by id and the limit. (Against the real database, tests/integration/test_recall_keyword_copy.py checks
it against the SQL statement.)"""

import math
import random
import uuid

import pytest

from cairn_recall.keyword_copy import KeywordDoc, SubjectPostings, TermPostings

K1, B = 1.2, 0.75


def build(docs: list[dict[str, int]], projects: list[uuid.UUID | None] | None = None) -> SubjectPostings:
    """A copy of rows given as {lexeme: term frequency}, ids in ascending order as the loader reads them."""
    ids = sorted(uuid.uuid4() for _ in docs)
    rows = [
        KeywordDoc(ids[i], projects[i] if projects else None, f"user: row {i}", None)
        for i in range(len(docs))
    ]
    lexemes = sorted({lex for doc in docs for lex in doc})
    terms = [
        TermPostings(lex, [i for i, d in enumerate(docs) if lex in d], [d[lex] for d in docs if lex in d])
        for lex in lexemes
    ]
    return SubjectPostings.build(7, rows, terms)


def bm25(docs: list[dict[str, int]], query: list[str], i: int) -> float:
    n = len(docs)
    avgdl = sum(len(d) for d in docs) / n
    score = 0.0
    for lex in query:
        df = sum(1 for d in docs if lex in d)
        tf = docs[i].get(lex, 0)
        if tf:
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            score += idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * len(docs[i]) / avgdl))
    return score


def test_scores_are_okapi_bm25_over_the_subjects_rows() -> None:
    rng = random.Random(5)
    vocabulary = [f"w{j}" for j in range(30)]
    docs = [
        {lex: rng.randint(1, 4) for lex in rng.sample(vocabulary, rng.randint(1, 12))} for _ in range(200)
    ]
    copy = build(docs)
    assert copy.rows == sum(len(d) for d in docs)
    query = ["w1", "w7", "w19", "absent"]
    found = copy.ranked(query, None, 500, K1, B)
    expected = sorted(
        ((bm25(docs, query, i), copy.memory_ids[i]) for i in range(len(docs)) if bm25(docs, query, i) > 0),
        key=lambda t: (-t[0], t[1]),
    )
    assert [r.id for r in found] == [m for _, m in expected]
    assert [r.value for r in found] == pytest.approx([s for s, _ in expected], rel=1e-12)


def test_coverage_is_the_share_of_the_querys_idf_mass_a_row_holds() -> None:
    copy = build([{"rare": 1}, {"common": 1}, {"common": 1}, {"common": 2, "rare": 1}])
    found = {r.id: r.coverage for r in copy.ranked(["rare", "common", "absent"], None, 10, K1, B)}
    n = 4

    def idf(df: int) -> float:
        return math.log(1 + (n - df + 0.5) / (df + 0.5))

    mass = idf(2) + idf(3) + idf(0)  # a term no row holds still counts in the query's mass
    ids = copy.memory_ids
    assert found[ids[0]] == pytest.approx(idf(2) / mass)
    assert found[ids[1]] == pytest.approx(idf(3) / mass)
    assert found[ids[3]] == pytest.approx((idf(2) + idf(3)) / mass)


def test_only_the_global_partition_and_the_asked_project_are_searched() -> None:
    project, other = uuid.uuid4(), uuid.uuid4()
    copy = build([{"deploy": 1}, {"deploy": 1}, {"deploy": 1}], [None, project, other])
    ids = copy.memory_ids
    assert {r.id for r in copy.ranked(["deploy"], None, 10, K1, B)} == {ids[0]}
    assert {r.id for r in copy.ranked(["deploy"], project, 10, K1, B)} == {ids[0], ids[1]}
    assert {r.id for r in copy.ranked(["deploy"], uuid.uuid4(), 10, K1, B)} == {ids[0]}  # unknown: empty


def test_equal_scores_are_ordered_by_id_across_the_limit() -> None:
    copy = build([{"same": 1} for _ in range(12)])
    found = copy.ranked(["same"], None, 5, K1, B)
    assert [r.id for r in found] == copy.memory_ids[:5]


def test_no_term_no_row_and_a_repeated_term_counts_once() -> None:
    copy = build([{"tomato": 3}, {"basil": 1}])
    assert copy.ranked([], None, 10, K1, B) == []
    assert copy.ranked(["zeppelin"], None, 10, K1, B) == []
    once = copy.ranked(["tomato"], None, 10, K1, B)
    twice = copy.ranked(["tomato", "tomato"], None, 10, K1, B)
    assert [(r.id, r.value, r.coverage) for r in once] == [(r.id, r.value, r.coverage) for r in twice]
    assert once[0].speaker == "user"
    assert build([]).ranked(["tomato"], None, 10, K1, B) == []
