"""Cached BM25 statistics for large subjects.

A large subject's document frequencies and size barely move between two queries, but computing them reads
every row that holds a query term (thousands of rows for a common word). Each recall replica therefore
keeps them for a short while: a stale count shifts an idf by a hair, never which rows may be seen.
"""

from cachetools import TTLCache
from sqlalchemy.ext.asyncio import AsyncSession

from cairn_recall.keyword import TermStats, document_frequencies, subject_size
from cairn_scope import Scope

Key = tuple[str, str, str]  # (tenant, subject, lexeme); lexeme "" holds the subject's size


class SubjectTermStats:
    def __init__(self, max_entries: int, ttl_seconds: float) -> None:
        self._size: TTLCache[tuple[str, str], tuple[int, float]] = TTLCache(max_entries, ttl_seconds)
        self._df: TTLCache[Key, int] = TTLCache(max_entries, ttl_seconds)

    async def for_query(self, session: AsyncSession, scope: Scope, lexemes: list[str]) -> TermStats:
        subject = (scope.tenant_id, scope.subject_id)
        size = self._size.get(subject)
        if size is None:
            size = await subject_size(session, scope)
            self._size[subject] = size
        missing = [lex for lex in lexemes if (*subject, lex) not in self._df]
        for lex, count in (await document_frequencies(session, scope, missing)).items():
            self._df[(*subject, lex)] = count
        df = {lex: self._df.get((*subject, lex), 0) for lex in lexemes}
        return TermStats(n_docs=size[0], avgdl=size[1], df=df)
