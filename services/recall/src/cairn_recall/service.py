"""Recall: hybrid (vector + full-text, fused by reciprocal rank) by default, index-safe ANN for large
subjects, exact top-k for small ones, and a scope-bound ILIKE fallback when no embedding can be had."""

import asyncio
import contextlib
import logging
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Literal

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from cairn_contracts.recall import RecallHit, RecallMeta, RecallRequest
from cairn_embeddings import EmbedderUnavailable, EmbeddingError
from cairn_providers import QueryEmbeddingCache, TenantEmbedders
from cairn_recall.keyword import keyword_statement, ranked
from cairn_recall.keyword_copy import SubjectPostings, SubjectPostingsCopies
from cairn_recall.metrics import FALLBACKS, KEYWORD_SIDES, RECALLS
from cairn_recall.ranking import Ranked, fuse, speaker_prior, wanted_speaker
from cairn_recall.settings import RecallSettings
from cairn_recall.store import HotReads, LargeSubjectState, RecallStore, ann_options
from cairn_recall.subject_index import SubjectIndexes
from cairn_recall.term_stats import SubjectTermStats
from cairn_recall.vector_copy import Similarities, SubjectVectorCopies, SubjectVectors
from cairn_scope import Scope
from cairn_storage.convert import memory_out
from cairn_storage.fulltext import QueryLexemes
from cairn_storage.models import EMBEDDING_DIM
from cairn_storage.usage import UsageMeter, estimate_tokens
from cairn_storage.vector_search import PGVECTOR_EF_SEARCH_MAX, IterativeScan

log = logging.getLogger(__name__)

Strategy = Literal["ann", "exact", "keyword", "subject_ann", "subject_exact"]
HotPublisher = Callable[[Scope, list[str]], Awaitable[None]]


def subject_ann_ef_search(settings: RecallSettings, pool: int) -> int:
    """hnsw.ef_search of a large subject's vector read: at least its pool."""
    return min(PGVECTOR_EF_SEARCH_MAX, max(settings.subject_index_ef_search, pool))


def subject_ann_options(settings: RecallSettings, iterative: IterativeScan) -> dict[str, str]:
    """The connection settings of the subject-ANN pool (the options `RecallStore.set_ann_options` would set
    for a default-sized pool), so its reads need no transaction to set them."""
    return ann_options(
        subject_ann_ef_search(settings, settings.recall_pool_min),
        iterative.mode,
        settings.hnsw_max_scan_tuples,
        settings.hnsw_scan_mem_multiplier,
        constants=True,
    )


class RecallService:
    def __init__(
        self,
        sessionmaker: async_sessionmaker[AsyncSession],
        reads: async_sessionmaker[AsyncSession],
        embedders: TenantEmbedders,
        settings: RecallSettings,
        iterative_scan: IterativeScan,
        publish_hot: HotPublisher,
        subject_indexes: SubjectIndexes,
        meter: UsageMeter,
        subject_ann: async_sessionmaker[AsyncSession],
        hot: HotReads,
    ) -> None:
        """`subject_ann`: AUTOCOMMIT sessions of a pool whose connections carry `subject_ann_options`, for
        the reads of large subjects (vector and keyword), planned with their bound values. `hot`: recall's
        constant reads (a large subject's state and chosen rows; a small subject's size, exact top-k and
        scored rows) on a plain scoped pool."""
        self._meter = meter
        self._subject_ann = subject_ann
        self._subject_ann_ef_search = subject_ann_ef_search(settings, settings.recall_pool_min)
        self._sm = sessionmaker
        # AUTOCOMMIT sessions on the same pool for statements that need no transaction: no BEGIN and COMMIT
        # round trips (the scope hook then sets the RLS scope per connection, only when it changes). ANN
        # scans keep a transaction: their planner options are transaction-local.
        self._reads = reads
        self._hot = hot
        self._embedders = embedders
        self._settings = settings
        self._iterative = iterative_scan
        self._publish_hot = publish_hot
        self._subject_indexes = subject_indexes
        self._cache = QueryEmbeddingCache(settings.query_cache_size, settings.query_cache_ttl_seconds)
        self._lexemes = QueryLexemes()
        self._term_stats = SubjectTermStats(
            settings.subject_term_stats_max_entries, settings.subject_term_stats_ttl_seconds
        )
        self.vectors = SubjectVectorCopies(settings.subject_copy_max_total_rows)
        self.postings = SubjectPostingsCopies(settings.subject_keyword_copy_max_total_postings)

    async def embed_query(self, tenant_id: str, query: str) -> list[float]:
        """The query's vector from the tenant's embedder; identical text skips the model for a while."""
        embedder, provider = await self._embedders.for_tenant_keyed(tenant_id)
        # `provider` names the tenant and its endpoint + model: no entry is shared across tenants.
        cached = self._cache.get(f"{provider}\x00{embedder.name}", query)
        if cached is not None:
            return cached
        vector = (await embedder.embed([query]))[0]
        self._meter.add(tenant_id, "embedded_tokens", estimate_tokens([query]))
        self._cache.put(f"{provider}\x00{embedder.name}", query, vector)
        return vector

    async def recall(
        self, scope: Scope, req: RecallRequest, vector: Awaitable[list[float]] | None = None
    ) -> tuple[list[RecallHit], RecallMeta]:
        """One metered recall. Merged recall calls it once too, with the query vector it is embedding for
        both halves (`vector`); otherwise the query is embedded here."""
        self._meter.add(scope.tenant_id, "recalls")
        hits, meta = await self._recall(scope, req, vector)
        RECALLS.labels(meta.strategy).inc()
        return hits, meta

    async def _recall(
        self, scope: Scope, req: RecallRequest, shared: Awaitable[list[float]] | None
    ) -> tuple[list[RecallHit], RecallMeta]:
        # A large subject's own indexes serve the live rows (superseded ones are outside their predicate).
        indexed = not req.include_superseded and await self._subject_indexes.ready(scope)
        # A large subject's query lexemes and copy versions: one round trip, while the query is embedded.
        state = asyncio.ensure_future(self._hot.large_subject_state(scope, req.query)) if indexed else None
        # The keyword side needs no vector: it runs while the query is being embedded (on its own thread).
        keyword = asyncio.ensure_future(self._keyword_side(scope, req, state))
        try:
            vector: list[float] | None = None
            if req.mode != "keyword":
                try:
                    vector = await (
                        shared if shared is not None else self.embed_query(scope.tenant_id, req.query)
                    )
                except EmbedderUnavailable as exc:
                    return await self._fallback(scope, req, exc.reason)
                except EmbeddingError:
                    return await self._fallback(scope, req, "provider_error")
            hits, meta = await self._healthy(scope, req, vector, state, keyword)
        finally:
            # The fallback, or a failed semantic side, does not wait for them.
            for pending in (keyword, state):
                if pending is not None and not pending.done():
                    pending.cancel()
                    with contextlib.suppress(asyncio.CancelledError, Exception):
                        await pending
        hot = [h.memory.id for h in hits if h.score is not None and h.score >= self._settings.hot_score_floor]
        if hot:
            await self._publish_hot(scope, hot)
        return hits, meta

    async def _healthy(
        self,
        scope: Scope,
        req: RecallRequest,
        vector: list[float] | None,
        state: Awaitable[LargeSubjectState] | None,
        keyword_side: Awaitable[list[Ranked]],
    ) -> tuple[list[RecallHit], RecallMeta]:
        settings = self._settings
        # Every mode over-fetches: the speaker prior re-ranks before the cut to `limit`.
        candidates = max(req.limit, settings.semantic_depth)
        # The two lists come from separate transactions on two connections, so PostgreSQL works on both at
        # once (each side is a few index scans; neither needs the other's snapshot).
        (semantic, strategy, iterative, similarities), keyword = await asyncio.gather(
            self._semantic_side(scope, req, vector, candidates, state), keyword_side
        )
        fused = fuse(
            semantic,
            keyword,
            settings.rrf_k,
            settings.rrf_keyword_weight,
            settings.keyword_coverage_power,
        )
        if settings.speaker_prior < 1.0 and fused:
            speakers = {r.id: r.speaker for r in (*semantic, *keyword)}
            fused = speaker_prior(fused, speakers, wanted_speaker(req.query), settings.speaker_prior)
        chosen = [(f.id, f.reason) for f in fused[: req.limit]]
        ids = [m for m, _ in chosen]
        if similarities is None:
            rows = await self._hot.rows_with_scores(scope, ids, vector)
        else:  # the copy scored every memory already
            found = await self._hot.rows(scope, ids)
            rows = {m: (r, similarities.of(m)) for m, r in found.items()}
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

    async def _semantic_side(
        self,
        scope: Scope,
        req: RecallRequest,
        vector: list[float] | None,
        candidates: int,
        state: Awaitable[LargeSubjectState] | None,
    ) -> tuple[list[Ranked], Strategy, IterativeScan | None, Similarities | None]:
        if vector is None:
            return [], "keyword", None, None
        settings = self._settings
        pool = max(settings.recall_pool_min, candidates * settings.recall_pool_factor)
        if state is None:
            return (*await self._unindexed_semantic(scope, req, vector, candidates, pool), None)
        copy = self._subject_copy(scope, (await state).vector_version)
        if copy is not None:
            project = uuid.UUID(req.project_id) if req.project_id else None
            nearest, similarities = await copy.nearest_batched(project, vector, candidates)
            return nearest, "subject_exact", None, similarities
        ef_search = subject_ann_ef_search(settings, pool)
        if ef_search == self._subject_ann_ef_search:
            # The pool's connections carry exactly these options: one round trip, no transaction.
            async with self._subject_ann() as session:
                found = await RecallStore(session).ann(scope, vector, candidates, pool, req.project_id)
            return found, "subject_ann", self._iterative, None
        async with self._sm.begin() as session:
            store = RecallStore(session)
            # Bound values planned as constants, so the subject's partial indexes match the statement.
            await store.set_ann_options(
                ef_search,
                self._iterative.mode,
                settings.hnsw_max_scan_tuples,
                settings.hnsw_scan_mem_multiplier,
                constants=True,
            )
            found = await store.ann(scope, vector, candidates, pool, req.project_id)
            return found, "subject_ann", self._iterative, None

    def _subject_copy(self, scope: Scope, version: int) -> SubjectVectors | None:
        """This replica's copy of a large subject's vectors when it is at the subject's current `version`;
        None (recall takes the SQL path) while it is missing or stale, and then a reload starts."""
        key = (scope.tenant_id, scope.subject_id)
        if not self.vectors.enabled or self._settings.subject_copy_max_rows <= 0:
            return None
        return self.vectors.if_current(
            key,
            version,
            lambda _: self._load_subject(scope),
            self._settings.subject_copy_reload_seconds,
        )

    async def _load_subject(self, scope: Scope) -> SubjectVectors | None:
        """The subject's copy, or None when it has more vectors than a copy may hold."""
        cap = self._settings.subject_copy_max_rows
        async with self._snapshot() as store:
            version = await store.vector_version(scope)
            if await store.subject_vectors_at_most(scope, cap) > cap:
                return None
            rows = await store.subject_vectors(scope)
        # Off the event loop: the int8 copy's session packs its rows (~0.1 s per 5,000 vectors).
        return await asyncio.to_thread(SubjectVectors.build, version, rows, EMBEDDING_DIM)

    @contextlib.asynccontextmanager
    async def _snapshot(self) -> AsyncIterator[RecallStore]:
        """One REPEATABLE READ snapshot for a copy's version and rows: a copy is never older than the
        version it claims."""
        async with self._sm() as session:
            await session.connection(execution_options={"isolation_level": "REPEATABLE READ"})
            yield RecallStore(session)

    def _postings_copy(self, scope: Scope, version: int) -> SubjectPostings | None:
        """This replica's copy of a large subject's postings when it is at the subject's current keyword
        `version`; None (the keyword side takes SQL) while it is missing or stale, and then a reload starts."""
        if not self.postings.enabled or self._settings.subject_keyword_copy_max_postings <= 0:
            return None
        return self.postings.if_current(
            (scope.tenant_id, scope.subject_id),
            version,
            lambda _: self._load_postings(scope),
            self._settings.subject_copy_reload_seconds,
        )

    async def _load_postings(self, scope: Scope) -> SubjectPostings | None:
        """The subject's postings, or None when it holds more than a copy may."""
        async with self._snapshot() as store:
            version = await store.keyword_version(scope)
            docs, terms = await store.subject_postings(scope)
        # Off the event loop: numpy builds the index from ~a million Python ints for a large subject.
        built = await asyncio.to_thread(SubjectPostings.build, version, docs, terms)
        return built if built.rows <= self._settings.subject_keyword_copy_max_postings else None

    async def _keyword_side(
        self, scope: Scope, req: RecallRequest, state: Awaitable[LargeSubjectState] | None
    ) -> list[Ranked]:
        if req.mode == "semantic" or req.include_superseded:
            return []
        settings = self._settings
        depth = max(req.limit, settings.keyword_depth)
        lexemes: list[str] | None = None
        if state is not None:
            current = await state
            postings = self._postings_copy(scope, current.keyword_version)
            if postings is not None:
                KEYWORD_SIDES.labels("copy").inc()
                project = uuid.UUID(req.project_id) if req.project_id else None
                return postings.ranked(current.lexemes, project, depth, settings.bm25_k1, settings.bm25_b)
            KEYWORD_SIDES.labels("sql").inc()
            lexemes = current.lexemes
        # A large subject's BM25 statement runs with custom plans (the subject-ANN pool forces them): the
        # generic plan PostgreSQL switches to after five executions of the prepared statement took 55 ms
        # where the custom plan takes 2 (20k-row subject in a 700k-row table, bench/recall_scale.py).
        # Its GIN index serves it inside `cairn_keyword_candidates`.
        indexed = state is not None
        async with (self._subject_ann if indexed else self._reads)() as session:
            if lexemes is None:
                lexemes = await self._lexemes(session, req.query)
            statement = keyword_statement(
                scope,
                lexemes,
                depth,
                req.project_id,
                k1=settings.bm25_k1,
                b=settings.bm25_b,
                stats=await self._term_stats.for_query(session, scope, lexemes) if indexed else None,
            )
            return await ranked(session, statement)

    async def _unindexed_semantic(
        self, scope: Scope, req: RecallRequest, vector: list[float], candidates: int, pool: int
    ) -> tuple[list[Ranked], Strategy, IterativeScan | None]:
        """Exact top-k for small subjects, the tenant-wide HNSW with the subject inside the scan above
        that; a subject past the subject-index threshold also gets its own indexes started."""
        settings = self._settings
        threshold = self._subject_indexes.min_rows if self._subject_indexes.enabled else 0
        rows = await self._hot.live_rows(scope)
        if threshold and rows > threshold:
            self._subject_indexes.ensure(scope)
        if req.include_superseded or rows <= settings.recall_exact_max_rows:
            exact = await self._hot.exact(scope, vector, candidates, req.project_id, req.include_superseded)
            return exact, "exact", None
        iterative = self._iterative
        ef = min(PGVECTOR_EF_SEARCH_MAX, max(settings.hnsw_ef_search, pool))
        async with self._sm.begin() as session:
            store = RecallStore(session)
            await store.set_ann_options(
                ef, iterative.mode, settings.hnsw_max_scan_tuples, settings.hnsw_scan_mem_multiplier
            )
            return await store.ann(scope, vector, candidates, pool, req.project_id), "ann", iterative

    async def _fallback(
        self, scope: Scope, req: RecallRequest, reason: str
    ) -> tuple[list[RecallHit], RecallMeta]:
        log.warning("recall degraded to ILIKE fallback: %s", reason)
        FALLBACKS.labels(reason).inc()
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
