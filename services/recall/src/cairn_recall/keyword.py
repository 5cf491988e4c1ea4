"""The keyword side of recall: Okapi BM25 over the subject's own rows, in one statement.

Document frequencies come from the subject's own rows, so a word common in this subject's memories weighs
little even when it is rare elsewhere (and the other way round). Each statement is constant SQL with its
scope in `:tenant_id` / `:subject_id` (the engine hook holds raw SQL to those, and row-level security to
the transaction's scope): a query's terms travel as arrays, so nothing is built or compiled per call (the
SQLAlchemy construction this replaced cost more CPU than the query itself).

Two paths:
- a subject without its own indexes: the candidates are every live row holding ANY query term, read
  through the (tenant, subject) btree with `ts_match_vq` (the function behind @@, which no tenant-wide GIN
  posting list serves), and the term statistics are computed over them in the same statement;
- a large subject with its own GIN index (statistics cached by `SubjectTermStats`): the candidates are the
  rows matching its rarest terms, taken while their document frequencies add up to at most `scan_max`,
  found through that index by `cairn_keyword_candidates` (migration 0015: under row-level security the
  planner may not run the non-leakproof @@ inside an index scan, so that function is the narrow door).
  A row sharing only the subject's commonest words with the query scores low in BM25 anyway; every
  query term still counts in the candidates' scores.
"""

from dataclasses import dataclass
from typing import Any

from sqlalchemy import TextClause, text
from sqlalchemy.ext.asyncio import AsyncSession

from cairn_recall.ranking import Ranked, speaker_of
from cairn_recall.sql import PARTITION, SUBJECT_LIVE, project_param, scope_params
from cairn_scope import Scope
from cairn_storage.fulltext import any_of, rarest_first, tsquery_term

# Term frequencies only for the best `scan_max` candidates by cover density (a huge subject with a common
# query term stays bounded); only the query's lexemes of each row, marked with weight A and filtered to it
# (C-level lookups) instead of unnesting every lexeme of a long row.
_TOP_BY_COVER_DENSITY = """
top AS (
    SELECT id, tsv, dl, head, role FROM docs
    ORDER BY ts_rank_cd(tsv, CAST(:any_query AS tsquery)) DESC, id
    LIMIT :scan_max
),
"""
# When the candidates are known to be at most `scan_max` (the rarest terms' document frequencies add up to
# no more), ranking them by cover density first would only cost time (ts_rank_cd on every candidate).
_TOP_ALL = """
top AS (SELECT id, tsv, dl, head, role FROM docs),
"""
# A small subject's candidates are known only inside the statement: every one when they are at most
# `scan_max` (ts_rank_cd on each, only to order a set that is kept whole, was a fifth of a 2,000-row
# subject's keyword statement: 10.7 -> 8.7 ms), else the best `scan_max` by cover density. The counts are
# one-time filters: only one branch runs.
_TOP_WHEN_MORE = """
top AS (
    SELECT id, tsv, dl, head, role FROM docs WHERE (SELECT count(*) FROM docs) <= :scan_max
    UNION ALL
    (SELECT id, tsv, dl, head, role FROM docs WHERE (SELECT count(*) FROM docs) > :scan_max
     ORDER BY ts_rank_cd(tsv, CAST(:any_query AS tsquery)) DESC, id
     LIMIT :scan_max)
),
"""
_SCORE = """
postings AS (
    SELECT top.id, top.dl, top.head, top.role, p.lexeme, coalesce(array_length(p.positions, 1), 1) AS tf
    FROM top,
         unnest(ts_filter(setweight(top.tsv, 'A', CAST(:lexemes AS text[])), '{a}'))
             AS p(lexeme, positions, weights)
)
SELECT p.id,
       sum(w.idf * p.tf * (CAST(:k1 AS float8) + 1)
           / (p.tf + CAST(:k1 AS float8)
              * (1 - CAST(:b AS float8) + CAST(:b AS float8) * p.dl / greatest(c.avgdl, 1e-9)))) AS rank,
       -- share of the query's idf mass a row covers: a row matching only common words is weak evidence
       sum(w.idf) / greatest((SELECT sum(idf) FROM weights), 1e-9) AS coverage,
       min(p.head) AS head, min(p.role) AS role
FROM postings p JOIN weights w ON w.lexeme = p.lexeme CROSS JOIN corpus c
GROUP BY p.id
ORDER BY rank DESC, p.id
LIMIT :limit
"""

_UNINDEXED = text(
    f"""
WITH docs AS MATERIALIZED (
    SELECT m.id, m.tsv, length(m.tsv) AS dl, left(m.text, 80) AS head, m.metadata ->> 'role' AS role
    FROM memories m
    WHERE {SUBJECT_LIVE} AND {PARTITION} AND ts_match_vq(m.tsv, CAST(:any_query AS tsquery))
),
corpus AS (
    SELECT (SELECT count(*) FROM memories m WHERE {SUBJECT_LIVE}) AS n_docs,
           (SELECT CAST(avg(dl) AS float8) FROM docs) AS avgdl
),
weights AS (
    SELECT t.lexeme,
           ln(1 + (c.n_docs - d.df + 0.5) / (d.df + 0.5)) AS idf
    FROM unnest(CAST(:lexemes AS text[]), CAST(:terms AS text[])) AS t(lexeme, term)
    CROSS JOIN corpus c
    CROSS JOIN LATERAL (SELECT count(*) AS df FROM docs WHERE docs.tsv @@ CAST(t.term AS tsquery)) d
),
{_TOP_WHEN_MORE}{_SCORE}
"""
)

# The large-subject candidates drive the statement (a nested loop into the primary key), so only the rows
# the subject's GIN index matched are read.
_CANDIDATES = (
    "cairn_keyword_candidates(CAST(:tenant_id AS uuid), CAST(:subject_id AS text), CAST(:match_query AS tsquery))"
    " AS k(id) JOIN memories m ON m.id = k.id"
)

_INDEXED_BODY = f"""
WITH docs AS MATERIALIZED (
    SELECT m.id, m.tsv, length(m.tsv) AS dl, left(m.text, 80) AS head, m.metadata ->> 'role' AS role
    FROM {_CANDIDATES}
    WHERE {SUBJECT_LIVE} AND {PARTITION}
),
corpus AS (SELECT CAST(:n_docs AS float8) AS n_docs, CAST(:avgdl AS float8) AS avgdl),
weights AS (
    SELECT t.lexeme, ln(1 + (c.n_docs - t.df + 0.5) / (t.df + 0.5)) AS idf
    FROM unnest(CAST(:lexemes AS text[]), CAST(:dfs AS int[])) AS t(lexeme, df) CROSS JOIN corpus c
),
"""
_INDEXED = text(_INDEXED_BODY + _TOP_BY_COVER_DENSITY + _SCORE)
_INDEXED_BOUNDED = text(_INDEXED_BODY + _TOP_ALL + _SCORE)

_DOCUMENT_FREQUENCIES = text(
    f"""
WITH docs AS MATERIALIZED (
    SELECT m.tsv FROM {_CANDIDATES} WHERE {SUBJECT_LIVE}
)
SELECT t.lexeme, (SELECT count(*) FROM docs WHERE docs.tsv @@ CAST(t.term AS tsquery)) AS df
FROM unnest(CAST(:lexemes AS text[]), CAST(:terms AS text[])) AS t(lexeme, term)
"""
)

_SUBJECT_SIZE = text(
    f"SELECT count(*), coalesce(CAST(avg(length(m.tsv)) AS float8), 0.0) FROM memories m WHERE {SUBJECT_LIVE}"
)


@dataclass(frozen=True)
class TermStats:
    """A subject's BM25 statistics: live rows, their mean tsvector length, and per-lexeme row counts."""

    n_docs: int
    avgdl: float
    df: dict[str, int]


def keyword_statement(
    scope: Scope,
    lexemes: list[str],
    limit: int,
    project_id: str | None,
    *,
    k1: float = 1.2,
    b: float = 0.75,
    scan_max: int = 1000,
    stats: TermStats | None = None,
) -> TextClause | None:
    """The bound BM25 statement for these terms (None when no candidate can match); `stats` selects the
    large-subject path (see the module docstring). Benchmarks print its plan."""
    if not lexemes:
        return None
    params: dict[str, Any] = {
        **scope_params(scope),
        "project_id": project_param(project_id),
        "any_query": any_of(lexemes),
        "lexemes": lexemes,
        "k1": k1,
        "b": b,
        "scan_max": scan_max,
        "limit": limit,
    }
    if stats is None:
        return _bound(_UNINDEXED, params | {"terms": [tsquery_term(lex) for lex in lexemes]})
    matched = rarest_first(lexemes, stats.df, scan_max)
    if not matched:
        return None
    bounded = sum(stats.df[lex] for lex in matched) <= scan_max
    return _bound(
        _INDEXED_BOUNDED if bounded else _INDEXED,
        params
        | {
            "match_query": any_of(matched),
            "n_docs": stats.n_docs,
            "avgdl": stats.avgdl,
            "dfs": [stats.df.get(lex, 0) for lex in lexemes],
        },
    )


def _bound(statement: TextClause, params: dict[str, Any]) -> TextClause:
    # bindparams() refuses a name the text lacks, and the variants use different subsets.
    return statement.bindparams(**{k: v for k, v in params.items() if k in statement._bindparams})


async def ranked(session: AsyncSession, statement: TextClause | None) -> list[Ranked]:
    """Run a `keyword_statement`: the subject's live rows holding any query term, best BM25 first (with
    their idf coverage and speaker)."""
    if statement is None:
        return []
    rows = await session.execute(statement)
    return [Ranked(r.id, float(r.rank), float(r.coverage), speaker_of(r.head, r.role)) for r in rows]


async def subject_size(session: AsyncSession, scope: Scope) -> tuple[int, float]:
    """The subject's live rows and their mean tsvector length (one pass; cached by the caller)."""
    row = (await session.execute(_SUBJECT_SIZE, scope_params(scope))).one()
    return int(row[0]), float(row[1])


async def document_frequencies(session: AsyncSession, scope: Scope, lexemes: list[str]) -> dict[str, int]:
    """How many of the subject's live rows hold each lexeme, counted over the rows holding any (found
    through the subject's GIN index)."""
    if not lexemes:
        return {}
    params = {
        **scope_params(scope),
        "match_query": any_of(lexemes),
        "lexemes": lexemes,
        "terms": [tsquery_term(lex) for lex in lexemes],
    }
    return {r.lexeme: int(r.df) for r in await session.execute(_DOCUMENT_FREQUENCIES, params)}
