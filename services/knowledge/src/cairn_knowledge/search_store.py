"""The queries of knowledge search, as constant SQL.

Search runs on every merged recall, so its statements are `text()` built once (prepared once per
connection) instead of SQLAlchemy constructs built, compiled and walked per call; the query vector is sent
once per statement in pgvector's text form. Every statement carries the tenant predicate and the
`searchable` visibility rule of `cairn_knowledge.store` (published; tenant-visible or the caller's own), so
no query reaches another tenant's articles or another subject's owner articles and drafts.
"""

import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import TextClause, text
from sqlalchemy.ext.asyncio import AsyncSession

from cairn_contracts.knowledge import ArticleStatus, Visibility
from cairn_knowledge.vector_cache import VectorRow
from cairn_scope import Scope
from cairn_storage.fulltext import any_of, tsquery_term
from cairn_storage.vector_search import vector_literal

_SEARCHABLE = (
    f"a.tenant_id = :tenant_id AND a.status = '{ArticleStatus.published.value}'"
    f" AND (a.visibility = '{Visibility.tenant.value}' OR a.owner_subject_id = :subject_id)"
)
# Global articles plus the given project's (an unknown project reads as an empty partition).
_PARTITION = "(a.project_id IS NULL OR a.project_id = CAST(:project_id AS uuid))"
_DISTANCE = "a.embedding <=> CAST(:vector AS vector)"
_ARTICLES_AT_MOST = text(
    "SELECT count(*) FROM (SELECT 1 FROM articles a WHERE a.tenant_id = :tenant_id LIMIT :cap) AS capped"
)

# Every visible article scored (its vectors are stored inline, migration 0012). The head's ORDER BY adds
# 0 so that no HNSW index can serve it: an index-ordered top-N is approximate and stops at ef_search rows.
# Each side keeps its own top `limit` (a head top-N, the chunks' best per article), which holds every
# article of the overall top `limit` whichever of its vectors is best.
_EXACT = text(
    f"""
SELECT pool.aid, min(pool.d) AS d FROM (
    (SELECT a.id AS aid, {_DISTANCE} AS d FROM articles a
     WHERE {_SEARCHABLE} AND {_PARTITION}
     ORDER BY ({_DISTANCE}) + 0, a.id LIMIT :limit)
    UNION ALL
    (SELECT c.article_id AS aid, min(c.embedding <=> CAST(:vector AS vector)) AS d
     FROM article_chunks c JOIN articles a ON a.id = c.article_id
     WHERE c.tenant_id = :tenant_id AND {_SEARCHABLE} AND {_PARTITION}
     GROUP BY c.article_id ORDER BY d, c.article_id LIMIT :limit)
) AS pool
GROUP BY pool.aid ORDER BY d, pool.aid LIMIT :limit
"""
)

# Large tenants: each vector index over-fetches `pool` rows with only the tenant residual (index-safe,
# carried by the iterative scan); the visibility and partition filters apply to that pool.
_ANN = text(
    f"""
SELECT pool.aid, min(pool.d) AS d FROM (
    (SELECT a.id AS aid, {_DISTANCE} AS d FROM articles a WHERE a.tenant_id = :tenant_id
     ORDER BY d LIMIT :pool)
    UNION ALL
    (SELECT c.article_id AS aid, c.embedding <=> CAST(:vector AS vector) AS d FROM article_chunks c
     WHERE c.tenant_id = :tenant_id ORDER BY d LIMIT :pool)
) AS pool
JOIN articles a ON a.id = pool.aid
WHERE {_SEARCHABLE} AND {_PARTITION}
GROUP BY pool.aid ORDER BY d, pool.aid LIMIT :limit
"""
)

# THE keyword ranking (one place): cover density over the weighted title + body vector for every query term
# (`rank_query`, an OR of them), over the articles holding one of `match_query`'s terms: the rarest ones
# when some are common (cairn_storage.fulltext.rarest_first), so a word most articles hold does not make
# the statement rank every article of the tenant.
_KEYWORD = text(
    f"""
SELECT a.id, ts_rank_cd(a.tsv, CAST(:rank_query AS tsquery)) AS rank FROM articles a
WHERE {_SEARCHABLE} AND {_PARTITION} AND a.tsv @@ CAST(:match_query AS tsquery)
ORDER BY rank DESC, a.created_at DESC, a.id LIMIT :limit
"""
)

# How many of the tenant's shared (published, tenant-visible) articles hold each lexeme: the statistics
# `rarest_first` reads. Owner articles stay out of them, so no count reflects another subject's article.
_TERM_COUNTS = text(
    f"""
SELECT t.lexeme,
       (SELECT count(*) FROM articles a
        WHERE a.tenant_id = :tenant_id AND a.status = '{ArticleStatus.published.value}'
          AND a.visibility = '{Visibility.tenant.value}' AND a.tsv @@ CAST(t.term AS tsquery)) AS df
FROM unnest(CAST(:lexemes AS text[]), CAST(:terms AS text[])) AS t(lexeme, term)
"""
)

# The tenant's knowledge version (migration 0016): 0 until its first article write.
_VERSION = text("SELECT coalesce(max(version), 0) FROM knowledge_versions WHERE tenant_id = :tenant_id")

# Every published vector of the tenant with what a search filters on, in pgvector's binary form (bytes the
# driver hands over as they are, instead of 384 floats parsed per row): cairn_knowledge.vector_cache.
_VECTORS = text(
    f"""
SELECT a.id AS article_id, a.visibility = '{Visibility.tenant.value}' AS tenant_visible, a.owner_subject_id,
       a.project_id, vector_send(a.embedding) AS vector
FROM articles a
WHERE a.tenant_id = :tenant_id AND a.status = '{ArticleStatus.published.value}' AND a.embedding IS NOT NULL
UNION ALL
SELECT c.article_id, a.visibility = '{Visibility.tenant.value}', a.owner_subject_id, a.project_id,
       vector_send(c.embedding)
FROM article_chunks c JOIN articles a ON a.id = c.article_id
WHERE c.tenant_id = :tenant_id AND a.tenant_id = :tenant_id AND a.status = '{ArticleStatus.published.value}'
"""
)

# Last resort of the degraded path (a query with no indexable lexeme): a title/body substring.
_SUBSTRING = text(
    f"""
SELECT a.id FROM articles a
WHERE {_SEARCHABLE} AND {_PARTITION}
  AND (a.title ILIKE :pattern ESCAPE '\\' OR a.body ILIKE :pattern ESCAPE '\\')
ORDER BY a.created_at DESC, a.id LIMIT :limit
"""
)

# Display fields, best-chunk similarity (NULL without a query vector) and the chunk-0 vector as real[]
# (decoded by the driver, not parsed from text).
_FOUND = text(
    f"""
SELECT a.id, a.title, a.category, a.tags, left(a.body, :head_chars) AS head, a.project_id, a.visibility,
       a.source, a.embedding_content_hash, CAST(a.embedding AS real[]) AS embedding,
       1 - least({_DISTANCE},
                 (SELECT min(c.embedding <=> CAST(:vector AS vector)) FROM article_chunks c
                  WHERE c.article_id = a.id)) AS similarity
FROM articles a WHERE {_SEARCHABLE} AND a.id = ANY(CAST(:ids AS uuid[]))
"""
)


@dataclass(frozen=True)
class Ranked:
    id: uuid.UUID
    value: float  # cosine distance for semantic lists, ts_rank_cd for keyword lists


@dataclass(frozen=True)
class Found:
    """A search candidate's display fields, best-chunk similarity and chunk-0 vector."""

    id: uuid.UUID
    title: str
    category: str | None
    tags: list[str]
    snippet: str
    project_id: uuid.UUID | None
    visibility: str
    source: str
    embedding_content_hash: str
    similarity: float | None
    vector: list[float] | None


def _vector(vector: list[float] | None) -> str | None:
    return None if vector is None else vector_literal(vector)


def _snippet(head: str, chars: int) -> str:
    flat = " ".join(head.split())
    return flat if len(flat) <= chars else flat[:chars].rsplit(" ", 1)[0] + " …"


class SearchStore:
    """Search queries over one AsyncSession; the caller owns the transaction."""

    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    @staticmethod
    def _params(scope: Scope, project_id: str | None = None, **extra: Any) -> dict[str, Any]:
        project = uuid.UUID(project_id) if project_id else None
        scoped = {
            "tenant_id": uuid.UUID(scope.tenant_id),
            "subject_id": scope.subject_id,
            "project_id": project,
        }
        return scoped | extra

    async def articles_at_most(self, scope: Scope, cap: int) -> int:
        params = {"tenant_id": uuid.UUID(scope.tenant_id), "cap": cap + 1}
        return int(await self.session.scalar(_ARTICLES_AT_MOST, params) or 0)

    async def knowledge_version(self, tenant_id: str) -> int:
        return int(await self.session.scalar(_VERSION, {"tenant_id": uuid.UUID(tenant_id)}) or 0)

    async def vector_rows(self, tenant_id: str) -> list[VectorRow]:
        """The tenant's published vectors; read in the same snapshot as `knowledge_version` to pair them."""
        rows = await self.session.execute(_VECTORS, {"tenant_id": uuid.UUID(tenant_id)})
        return [
            VectorRow(r.article_id, bool(r.tenant_visible), r.owner_subject_id, r.project_id, bytes(r.vector))
            for r in rows
        ]

    async def set_ann_options(self, ef_search: int, iterative_scan: str | None) -> None:
        """Transaction-local options (pooled connections never keep them), in one round trip."""
        # Only where the probe accepted it: an older pgvector refuses the name itself.
        scan = ", set_config('hnsw.iterative_scan', :scan, true)" if iterative_scan else ""
        params = {"ef": str(ef_search)} | ({"scan": iterative_scan} if iterative_scan else {})
        await self.session.execute(text(f"SELECT set_config('hnsw.ef_search', :ef, true){scan}"), params)

    def semantic_statement(
        self, scope: Scope, vector: list[float], limit: int, project_id: str | None, *, ann: bool, pool: int
    ) -> TextClause:
        """The bound statement `semantic` runs (benchmarks print its plan)."""
        params = self._params(scope, project_id, vector=_vector(vector), limit=limit)
        return (_ANN if ann else _EXACT).bindparams(**params, **({"pool": pool} if ann else {}))

    async def semantic(
        self, scope: Scope, vector: list[float], limit: int, project_id: str | None, *, ann: bool, pool: int
    ) -> list[Ranked]:
        """Articles by their best chunk's cosine distance: exact, or through the HNSW indexes (`ann`)."""
        statement = self.semantic_statement(scope, vector, limit, project_id, ann=ann, pool=pool)
        return [Ranked(r.aid, float(r.d)) for r in await self.session.execute(statement)]

    async def keyword(
        self, scope: Scope, lexemes: list[str], match: list[str], limit: int, project_id: str | None
    ) -> list[Ranked]:
        """Articles holding any of `match`, by cover density over every query lexeme."""
        params = self._params(
            scope, project_id, rank_query=any_of(lexemes), match_query=any_of(match), limit=limit
        )
        return [Ranked(r.id, float(r.rank)) for r in await self.session.execute(_KEYWORD, params)]

    async def term_counts(self, scope: Scope, lexemes: list[str]) -> dict[str, int]:
        """Each lexeme's count among the tenant's published, tenant-visible articles."""
        params = {
            "tenant_id": uuid.UUID(scope.tenant_id),
            "lexemes": lexemes,
            "terms": [tsquery_term(lex) for lex in lexemes],
        }
        return {r.lexeme: int(r.df) for r in await self.session.execute(_TERM_COUNTS, params)}

    async def substring(self, scope: Scope, query: str, limit: int, project_id: str | None) -> list[Ranked]:
        pattern = "%" + query.strip().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        rows = await self.session.execute(
            _SUBSTRING, self._params(scope, project_id, pattern=pattern, limit=limit)
        )
        return [Ranked(r.id, 0.0) for r in rows]

    async def found(
        self, scope: Scope, ids: list[uuid.UUID], vector: list[float] | None, snippet_chars: int
    ) -> dict[uuid.UUID, Found]:
        """Display fields, best-chunk similarity (with a query vector) and the chunk-0 vector of `ids`."""
        if not ids:
            return {}
        params = self._params(scope, ids=ids, vector=_vector(vector), head_chars=snippet_chars + 1)
        return {
            r.id: Found(
                id=r.id,
                title=r.title,
                category=r.category,
                tags=list(r.tags or []),
                snippet=_snippet(str(r.head), snippet_chars),
                project_id=r.project_id,
                visibility=r.visibility,
                source=r.source,
                embedding_content_hash=r.embedding_content_hash,
                similarity=None if r.similarity is None else float(r.similarity),
                vector=None if r.embedding is None else list(r.embedding),
            )
            for r in await self.session.execute(_FOUND, params)
        }
