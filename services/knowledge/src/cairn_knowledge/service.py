"""Knowledge reads: get, list, oversight delete, visible ids, and hybrid search with diversity."""

import asyncio
import contextlib
import logging
import uuid
from typing import Literal

import numpy as np
from cachetools import TTLCache
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from cairn_contracts.errors import NotFound
from cairn_contracts.knowledge import (
    AnswerConfidence,
    Article,
    ArticleSource,
    KnowledgeHit,
    KnowledgeSearchMessage,
    KnowledgeSearchMeta,
    KnowledgeSelectionReason,
    ListArticlesRequest,
    Provenance,
    Visibility,
)
from cairn_embeddings import EmbedderUnavailable, EmbeddingError
from cairn_knowledge.convert import article_out
from cairn_knowledge.diversity import Candidate, Knobs, knobs_from, pool_size, select
from cairn_knowledge.search_store import Found, Ranked, SearchStore
from cairn_knowledge.settings import KnowledgeSettings
from cairn_knowledge.store import KnowledgeStore
from cairn_knowledge.vector_cache import ArticleVectorCache, TenantVectors
from cairn_providers import QueryEmbeddingCache, TenantEmbedders
from cairn_scope import Scope
from cairn_storage.fulltext import QueryLexemes, TermCounts, rarest_first
from cairn_storage.models import EMBEDDING_DIM
from cairn_storage.usage import UsageMeter, estimate_tokens
from cairn_storage.vector_search import PGVECTOR_EF_SEARCH_MAX, IterativeScan

log = logging.getLogger(__name__)


class ArticleNotFound(NotFound):
    default_message = "no such article"


def fuse(
    semantic: list[Ranked], keyword: list[Ranked], k: int
) -> list[tuple[uuid.UUID, KnowledgeSelectionReason]]:
    """Reciprocal rank fusion: each list contributes 1 / (k + rank); ties keep the semantic order."""
    scores: dict[uuid.UUID, float] = {}
    for ranked in (semantic, keyword):
        for rank, item in enumerate(ranked, start=1):
            scores[item.id] = scores.get(item.id, 0.0) + 1.0 / (k + rank)
    in_semantic = {r.id for r in semantic}
    in_keyword = {r.id for r in keyword}

    def reason(article_id: uuid.UUID) -> KnowledgeSelectionReason:
        if article_id in in_semantic and article_id in in_keyword:
            return "keyword+semantic"
        return "semantic" if article_id in in_semantic else "keyword"

    return [(a, reason(a)) for a in sorted(scores, key=lambda a: -scores[a])]


def answer_confidence(scores: list[float | None]) -> AnswerConfidence:
    """Whether this query's knowledge results are answers, from the separation of its OWN scores (never a
    fixed floor): `answer` when the top score stands further above the second than the second stands above
    the last of the pool; `weak` when results exist but do not separate (or are too few, or unscored);
    `none` when nothing was returned."""
    if not scores:
        return "none"
    values = sorted((s for s in scores if s is not None), reverse=True)
    if len(values) < 3:
        return "weak"
    gap = values[0] - values[1]
    spread = values[1] - values[-1]
    return "answer" if gap > 0 and gap >= spread else "weak"


async def _nothing() -> list[Ranked]:
    return []


def _keyword_score(rank: float) -> float:
    return rank / (1.0 + rank)  # ts_rank_cd is unbounded; squash it into [0, 1)


class KnowledgeService:
    def __init__(
        self,
        sessionmaker: async_sessionmaker[AsyncSession],
        reads: async_sessionmaker[AsyncSession],
        embedders: TenantEmbedders,
        settings: KnowledgeSettings,
        iterative_scan: IterativeScan,
        meter: UsageMeter,
    ) -> None:
        self._meter = meter
        self._sm = sessionmaker
        # AUTOCOMMIT sessions on the same pool for search's one-statement reads (no BEGIN and COMMIT round
        # trips); the ANN path keeps a transaction for its transaction-local options.
        self._reads = reads
        self._lexemes = QueryLexemes()
        self._term_counts = TermCounts(
            settings.knowledge_term_counts_max_entries, settings.knowledge_term_counts_ttl_seconds
        )
        self._article_counts: TTLCache[str, int] = TTLCache(100_000, settings.knowledge_strategy_ttl_seconds)
        self.vectors = ArticleVectorCache(settings.knowledge_vector_cache_max_rows)
        self._embedders = embedders
        self._settings = settings
        self._iterative = iterative_scan
        self._query_cache = QueryEmbeddingCache(
            settings.knowledge_query_cache_size, settings.knowledge_query_cache_ttl_seconds
        )
        self._knobs = Knobs(
            enabled=settings.recall_diversity_enabled,
            mmr_lambda=settings.recall_diversity_lambda,
            near_dup_threshold=settings.recall_diversity_near_dup_threshold,
            over_fetch=settings.recall_diversity_over_fetch,
            max_pool=settings.recall_diversity_max_pool,
        )

    async def get(self, scope: Scope, article_id: str) -> Article:
        async with self._sm() as session:
            row = await KnowledgeStore(session).get(scope, article_id)
            if row is None:
                raise ArticleNotFound()
            return article_out(row, body=row.body)

    async def list_articles(self, scope: Scope, query: ListArticlesRequest) -> tuple[list[Article], int]:
        query = query.model_copy(update={"all_subjects": query.all_subjects and scope.is_superadmin})
        async with self._sm() as session:
            rows, total = await KnowledgeStore(session).list_articles(scope, query)
        return [article_out(r) for r in rows], total

    async def delete(self, scope: Scope, article_id: str) -> Article:
        async with self._sm.begin() as session:
            row = await KnowledgeStore(session).delete_any(scope, article_id)
            if row is None:
                raise ArticleNotFound()
            return article_out(row)

    async def visible_ids(self, scope: Scope, ids: list[str]) -> list[str]:
        async with self._sm() as session:
            return await KnowledgeStore(session).visible_ids(scope, ids)

    async def _query_vector(
        self, scope: Scope, req: KnowledgeSearchMessage
    ) -> tuple[list[float] | None, str | None]:
        """The query's vector, or (None, degradation reason)."""
        try:
            embedder, provider = await self._embedders.for_tenant_keyed(scope.tenant_id)
            if req.query_vector is not None and req.query_vector_model == embedder.name:
                return req.query_vector, None
            # `provider` names the tenant and its endpoint + model: no entry is shared across tenants.
            key = f"{provider}\x00{embedder.name}"
            cached = self._query_cache.get(key, req.query)
            if cached is not None:
                return cached, None
            vector = (await embedder.embed([req.query]))[0]
            self._meter.add(scope.tenant_id, "embedded_tokens", estimate_tokens([req.query]))
            self._query_cache.put(key, req.query, vector)
            return vector, None
        except EmbedderUnavailable as exc:
            return None, f"embedder_{exc.reason}"
        except EmbeddingError:
            return None, "embedder_provider_error"

    async def _uses_ann(self, scope: Scope) -> bool:
        """Whether the tenant has more articles than an exact scan should read (its count is kept a while)."""
        limit = self._settings.knowledge_exact_max_rows
        count = self._article_counts.get(scope.tenant_id)
        if count is None:
            async with self._reads() as session:
                count = await SearchStore(session).articles_at_most(scope, limit)
            self._article_counts[scope.tenant_id] = count
        return count > limit

    async def _semantic(
        self, scope: Scope, req: KnowledgeSearchMessage, vector: list[float] | None, candidates: int
    ) -> tuple[list[Ranked], Literal["exact", "ann", "keyword"], IterativeScan | None]:
        if vector is None:
            return [], "keyword", None
        if not await self._uses_ann(scope):
            cached = await self._cached_nearest(scope, req, vector, candidates)
            if cached is not None:
                return cached, "exact", None
            async with self._reads() as session:
                exact = await SearchStore(session).semantic(
                    scope, vector, candidates, req.project_id, ann=False, pool=candidates
                )
            return exact, "exact", None
        async with self._sm.begin() as session:
            store = SearchStore(session)
            # The tenant residual rides on iterative scan; only visibility/partition thin the pool.
            inner_pool = candidates + self._settings.knowledge_ann_pool_margin
            ef = min(PGVECTOR_EF_SEARCH_MAX, max(self._settings.knowledge_hnsw_ef_search, inner_pool))
            await store.set_ann_options(ef, self._iterative.mode)
            found = await store.semantic(scope, vector, candidates, req.project_id, ann=True, pool=inner_pool)
            return found, "ann", self._iterative

    async def _cached_nearest(
        self, scope: Scope, req: KnowledgeSearchMessage, vector: list[float], candidates: int
    ) -> list[Ranked] | None:
        """The exact top from this replica's copy of the tenant's vectors, once it is at the tenant's current
        version (None: the cache is off or the tenant does not fit; search in SQL)."""
        if not self.vectors.enabled:
            return None
        async with self._reads() as session:
            version = await SearchStore(session).knowledge_version(scope.tenant_id)
        tenant = await self.vectors.at_least(scope.tenant_id, version, self._load_vectors)
        if tenant is None:
            return None
        project = uuid.UUID(req.project_id) if req.project_id else None
        return [Ranked(a, d) for a, d in tenant.nearest(scope.subject_id, project, vector, candidates)]

    async def _load_vectors(self, tenant_id: str) -> TenantVectors:
        # One snapshot for the version and the rows: the copy is never older than the version it claims.
        async with self._sm() as session:
            await session.connection(execution_options={"isolation_level": "REPEATABLE READ"})
            store = SearchStore(session)
            version = await store.knowledge_version(tenant_id)
            rows = await store.vector_rows(tenant_id)
        return TenantVectors.build(version, rows, EMBEDDING_DIM)

    async def _keyword(self, scope: Scope, req: KnowledgeSearchMessage, candidates: int) -> list[Ranked]:
        async with self._reads() as session:
            store = SearchStore(session)
            lexemes = await self._lexemes(session, req.query)
            if not lexemes:
                return []

            async def count(missing: list[str]) -> dict[str, int]:
                return await store.term_counts(scope, missing)

            df = await self._term_counts.get((scope.tenant_id,), lexemes, count)
            # A term no shared article holds may still be in the caller's own owner articles: always match it.
            match = rarest_first(lexemes, df, self._settings.knowledge_keyword_scan_max)
            match += [lex for lex in lexemes if not df[lex]]
            return await store.keyword(scope, lexemes, match, candidates, req.project_id)

    async def search(
        self, scope: Scope, req: KnowledgeSearchMessage
    ) -> tuple[list[KnowledgeHit], KnowledgeSearchMeta]:
        knobs = knobs_from(self._knobs, **req.diversity.model_dump())
        pool_n = pool_size(req.limit, knobs)
        candidates = max(pool_n, self._settings.knowledge_candidate_pool)
        # The keyword list needs no vector: it runs while the query is embedded, on its own connection (a
        # semantic-only search runs it only when it degrades).
        keyword_side = (
            None if req.mode == "semantic" else asyncio.ensure_future(self._keyword(scope, req, candidates))
        )
        try:
            vector, reason = (None, None) if req.mode == "keyword" else await self._query_vector(scope, req)
            if keyword_side is None and vector is None:
                keyword_side = asyncio.ensure_future(self._keyword(scope, req, candidates))
            (semantic, strategy, iterative), keyword = await asyncio.gather(
                self._semantic(scope, req, vector, candidates), keyword_side or _nothing()
            )
        finally:
            if keyword_side is not None and not keyword_side.done():  # the semantic side failed
                keyword_side.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await keyword_side
        fallback = reason is not None
        async with self._reads() as session:
            store = SearchStore(session)
            substring: list[Ranked] = []
            if vector is None and not keyword:
                substring = await store.substring(scope, req.query, candidates, req.project_id)
            fused = fuse(semantic, keyword, self._settings.knowledge_rrf_k)
            fused += [(r.id, "unscored") for r in substring]
            pool_ids = [a for a, _ in fused[:pool_n]]
            found = await store.found(scope, pool_ids, vector, self._settings.knowledge_snippet_chars)
        reasons = dict(fused)
        keyword_rank = {r.id: r.value for r in keyword}
        ranked = [found[a] for a in pool_ids if a in found]

        pinned: uuid.UUID | None = None
        wanted = req.query.strip().lower()
        for item in ranked:
            if item.title.strip().lower() == wanted:
                pinned = item.id
                ranked.remove(item)
                ranked.insert(0, item)
                break

        def score(item: Found) -> float | None:
            if vector is not None:
                return item.similarity
            if item.id in keyword_rank:
                return _keyword_score(keyword_rank[item.id])
            return None

        seen = set(req.seen_ids)
        pool = [
            Candidate(
                id=str(item.id),
                relevance=1.0 - i / max(len(ranked), 1),
                vector=None if item.vector is None else np.asarray(item.vector, dtype=np.float32),
                fingerprint=item.embedding_content_hash,
                seen=str(item.id) in seen,
            )
            for i, item in enumerate(ranked)
        ]
        selection = select(
            pool,
            req.limit,
            knobs,
            mode="reduce" if req.reduce else "reorder",
            pinned=str(pinned) if pinned else None,
        )
        chosen = selection.ids if req.reduce else (selection.ids + selection.dropped)[: req.limit]
        by_id = {str(item.id): item for item in ranked}

        def reason_of(item: Found) -> KnowledgeSelectionReason:
            why = reasons[item.id]
            if fallback and why != "unscored":
                return "keyword_fallback"
            return why

        hits = [
            KnowledgeHit(
                id=str(item.id),
                title=item.title,
                category=item.category,
                tags=item.tags,
                score=score(item),
                snippet=item.snippet,
                selection_reason=reason_of(item),
                project_id=str(item.project_id) if item.project_id else None,
                visibility=Visibility(item.visibility),
                source=ArticleSource(item.source),
            )
            for item in (by_id[i] for i in chosen)
        ]
        provenance: Provenance = (
            "none" if not hits else ("curated" if pinned and hits[0].id == str(pinned) else "search")
        )
        meta = KnowledgeSearchMeta(
            total_count=len(hits),
            limit=req.limit,
            mode=req.mode,
            fallback=fallback,
            reason=reason,
            underfilled=len(hits) < req.limit,
            strategy=strategy,
            provenance=provenance,
            confidence=hits[0].score if hits else None,
            answer_confidence=answer_confidence([score(item) for item in ranked]),
            diversity=selection.meta,
            candidates=len(ranked),
            ann_iterative_scan=iterative.state if iterative else None,
            ann_iterative_scan_reason=iterative.reason
            if iterative and iterative.state == "unavailable"
            else None,
        )
        return hits, meta
