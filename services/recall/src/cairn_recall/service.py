"""Recall: hybrid (vector + full-text, fused by reciprocal rank) by default, index-safe ANN for large
subjects, exact top-k for small ones, and a scope-bound ILIKE fallback when no embedding can be had."""

import logging
from collections.abc import Awaitable, Callable
from typing import Literal

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from cairn_contracts.recall import RecallHit, RecallMeta, RecallRequest
from cairn_embeddings import EmbedderUnavailable, EmbeddingError
from cairn_providers import TenantEmbedders
from cairn_recall.query_cache import QueryEmbeddingCache
from cairn_recall.ranking import Ranked, fuse, speaker_prior, wanted_speaker
from cairn_recall.settings import RecallSettings
from cairn_recall.store import RecallStore
from cairn_scope import Scope
from cairn_storage.convert import memory_out
from cairn_storage.vector_search import PGVECTOR_EF_SEARCH_MAX, IterativeScan

log = logging.getLogger(__name__)

HotPublisher = Callable[[Scope, list[str]], Awaitable[None]]


class RecallService:
    def __init__(
        self,
        sessionmaker: async_sessionmaker[AsyncSession],
        embedders: TenantEmbedders,
        settings: RecallSettings,
        iterative_scan: IterativeScan,
        publish_hot: HotPublisher,
    ) -> None:
        self._sm = sessionmaker
        self._embedders = embedders
        self._settings = settings
        self._iterative = iterative_scan
        self._publish_hot = publish_hot
        self._cache = QueryEmbeddingCache(settings.query_cache_size, settings.query_cache_ttl_seconds)

    async def embed_query(self, tenant_id: str, query: str) -> list[float]:
        """The query's vector from the tenant's embedder; identical text skips the model for a while."""
        embedder = await self._embedders.for_tenant(tenant_id)
        key = f"{embedder.name}\x00{query}"  # vectors of different models never mix
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        vector = (await embedder.embed([query]))[0]
        self._cache.put(key, vector)
        return vector

    async def recall(self, scope: Scope, req: RecallRequest) -> tuple[list[RecallHit], RecallMeta]:
        vector: list[float] | None = None
        if req.mode != "keyword":
            try:
                vector = await self.embed_query(scope.tenant_id, req.query)
            except EmbedderUnavailable as exc:
                return await self._fallback(scope, req, exc.reason)
            except EmbeddingError:
                return await self._fallback(scope, req, "provider_error")
        hits, meta = await self._healthy(scope, req, vector)
        hot = [h.memory.id for h in hits if h.score is not None and h.score >= self._settings.hot_score_floor]
        if hot:
            await self._publish_hot(scope, hot)
        return hits, meta

    async def _healthy(
        self, scope: Scope, req: RecallRequest, vector: list[float] | None
    ) -> tuple[list[RecallHit], RecallMeta]:
        strategy: Literal["ann", "exact", "keyword"]
        settings = self._settings
        # Every mode over-fetches: the speaker prior re-ranks before the cut to `limit`.
        candidates = max(req.limit, settings.semantic_depth)
        strategy = "exact" if vector is not None else "keyword"
        iterative: IterativeScan | None = None
        async with self._sm.begin() as session:
            store = RecallStore(session)
            semantic: list[Ranked] = []
            keyword: list[Ranked] = []
            if vector is not None:
                small = await store.live_rows_at_most(scope, self._settings.recall_exact_max_rows)
                if req.include_superseded or small <= settings.recall_exact_max_rows:
                    semantic = await store.exact(
                        scope, vector, candidates, req.project_id, req.include_superseded
                    )
                else:
                    strategy, iterative = "ann", self._iterative
                    pool = max(settings.recall_pool_min, candidates * settings.recall_pool_factor)
                    ef = min(PGVECTOR_EF_SEARCH_MAX, max(settings.hnsw_ef_search, pool))
                    await store.set_ann_options(
                        ef, iterative.mode, settings.hnsw_max_scan_tuples, settings.hnsw_scan_mem_multiplier
                    )
                    semantic = await store.ann(scope, vector, candidates, pool, req.project_id)
            if req.mode != "semantic" and not req.include_superseded:
                depth = max(req.limit, settings.keyword_depth)
                keyword = await store.keyword(
                    scope,
                    await store.query_lexemes(req.query),
                    depth,
                    req.project_id,
                    k1=settings.bm25_k1,
                    b=settings.bm25_b,
                )
            fused = fuse(
                semantic,
                keyword,
                settings.rrf_k,
                settings.rrf_keyword_weight,
                settings.keyword_coverage_power,
            )
            if settings.speaker_prior < 1.0 and fused:
                speakers = await store.speakers(scope, [f.id for f in fused])
                fused = speaker_prior(fused, speakers, wanted_speaker(req.query), settings.speaker_prior)
            chosen = [(f.id, f.reason) for f in fused[: req.limit]]
            rows = await store.rows_with_scores(scope, [m for m, _ in chosen], vector)
        hits = [
            RecallHit(memory=memory_out(rows[m][0]), score=rows[m][1], selection_reason=reason)
            for m, reason in chosen
            if m in rows
        ]
        meta = RecallMeta(
            total_count=len(hits),
            fallback=False,
            reason=None,
            underfilled=len(hits) < req.limit,
            mode=req.mode,
            strategy=strategy,
            ann_iterative_scan=iterative.state if iterative else None,
            ann_iterative_scan_reason=iterative.reason
            if iterative and iterative.state == "unavailable"
            else None,
        )
        return hits, meta

    async def _fallback(
        self, scope: Scope, req: RecallRequest, reason: str
    ) -> tuple[list[RecallHit], RecallMeta]:
        log.warning("recall degraded to ILIKE fallback: %s", reason)
        async with self._sm() as session:
            rows = await RecallStore(session).ilike_fallback(scope, req.query, req.limit, req.project_id)
        hits = [RecallHit(memory=memory_out(r), score=None, selection_reason="ilike_fallback") for r in rows]
        meta = RecallMeta(
            total_count=len(hits),
            fallback=True,
            reason=f"embedder_{reason}",
            underfilled=len(hits) < req.limit,
            mode=req.mode,
            strategy="ilike",
        )
        return hits, meta
