"""Full-text facts every keyword reader needs: a query's lexemes, tsquery text built from them, and which
of them to match when some are common.

Memory recall (BM25 over a subject's rows) and knowledge search (cover density over a tenant's articles)
both match a row holding ANY query term. A term that most rows hold makes "any term" read most rows, so a
large corpus matches its rarest terms only, while every term still counts in the ranking (`rarest_first`).
"""

from collections.abc import Awaitable, Callable

from cachetools import LRUCache, TTLCache
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

__all__ = ["QueryLexemes", "TermCounts", "any_of", "rarest_first", "tsquery_term"]

_QUERY_LEXEMES = text("SELECT tsvector_to_array(to_tsvector('english', CAST(:query AS text)))")


class QueryLexemes:
    """A query's terms as the full-text indexes store them (stemmed, stop words removed), computed by
    PostgreSQL's own parser. The mapping is a pure function of the text, so an LRU of recent queries is
    exact: a repeated query skips a round trip."""

    def __init__(self, max_entries: int = 4096) -> None:
        self._cache: LRUCache[str, list[str]] = LRUCache(max_entries)

    async def __call__(self, session: AsyncSession, query: str) -> list[str]:
        cached = self._cache.get(query)
        if cached is not None:
            return list(cached)
        lexemes = list(await session.scalar(_QUERY_LEXEMES, {"query": query}) or [])
        self._cache[query] = lexemes
        return list(lexemes)


def tsquery_term(lexeme: str) -> str:
    """A lexeme as a quoted tsquery operand (cast as is: no parser or dictionary runs on it again)."""
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


def any_of(lexemes: list[str]) -> str:
    """A tsquery (as text) matching a row that holds any of `lexemes`."""
    return " | ".join(tsquery_term(lex) for lex in lexemes)


def rarest_first(lexemes: list[str], df: dict[str, int], budget: int) -> list[str]:
    """The query's terms that occur in the corpus, rarest first, while their document frequencies add up
    to at most `budget` (always at least the rarest one)."""
    present = sorted((lex for lex in lexemes if df.get(lex, 0) > 0), key=lambda lex: (df[lex], lex))
    chosen: list[str] = []
    total = 0
    for lex in present:
        if chosen and total + df[lex] > budget:
            break
        chosen.append(lex)
        total += df[lex]
    return chosen


Counter = Callable[[list[str]], Awaitable[dict[str, int]]]


class TermCounts:
    """Document frequencies per corpus (a subject's memories, a tenant's articles), kept for a while by each
    replica: they barely move between two queries, but counting a common word reads every row holding
    it. A stale count shifts a weight or the rarest-term choice by a hair, never which rows may be seen."""

    def __init__(self, max_entries: int, ttl_seconds: float) -> None:
        self._df: TTLCache[tuple[tuple[str, ...], str], int] = TTLCache(max_entries, ttl_seconds)

    async def get(self, corpus: tuple[str, ...], lexemes: list[str], count: Counter) -> dict[str, int]:
        """Each lexeme's document frequency in `corpus`; `count` is asked only for the ones not kept."""
        missing = [lex for lex in lexemes if (corpus, lex) not in self._df]
        if missing:
            counted = await count(missing)
            for lex in missing:
                self._df[(corpus, lex)] = counted.get(lex, 0)
        return {lex: self._df.get((corpus, lex), 0) for lex in lexemes}
