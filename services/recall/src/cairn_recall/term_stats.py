"""Cached BM25 statistics for large subjects.

A large subject's document frequencies and size barely move between two queries, but computing them reads
every row that holds a query term (thousands of rows for a common word). Each recall replica therefore
keeps them for a short while: a stale count shifts an idf by a hair, never which rows may be seen.
"""

from cachetools import TTLCache
from sqlalchemy.ext.asyncio import AsyncSession

from cairn_recall.keyword import TermStats, document_frequencies, subject_size
from cairn_scope import Scope
from cairn_storage.fulltext import TermCounts


class SubjectTermStats:
    def __init__(self, max_entries: int, ttl_seconds: float) -> None:
        self._size: TTLCache[tuple[str, str], tuple[int, float]] = TTLCache(max_entries, ttl_seconds)
        self._df = TermCounts(max_entries, ttl_seconds)

    async def for_query(self, session: AsyncSession, scope: Scope, lexemes: list[str]) -> TermStats:
        subject = (scope.tenant_id, scope.subject_id)
        size = self._size.get(subject)
        if size is None:
            size = await subject_size(session, scope)
            self._size[subject] = size

        async def count(missing: list[str]) -> dict[str, int]:
            return await document_frequencies(session, scope, missing)

        df = await self._df.get(subject, lexemes, count)
        return TermStats(n_docs=size[0], avgdl=size[1], df=df)
