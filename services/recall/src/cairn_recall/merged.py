"""Merged recall (`cairn.v1.recall.context`): the subject's memory recall (in-process) and the knowledge
service's search (over NATS) run concurrently; the result is one deterministically sorted list with the
selection ledger, the untouched per-source envelopes, and a degraded path instead of any 500.

The knowledge half is over-fetched and reduced by the diversity selector inside the knowledge service
(where the vectors are); this module supplies the session's shown-set and records what was surfaced.
"""

import asyncio
import logging
import math
import uuid
from typing import Any

from pydantic import ValidationError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from cairn_contracts import subjects
from cairn_contracts.errors import CairnError, NotSurfaced
from cairn_contracts.knowledge import KnowledgeHit, KnowledgeSearchMessage, KnowledgeSearchMeta
from cairn_contracts.recall import RecallHit, RecallMeta, RecallRequest
from cairn_contracts.recall_context import (
    CandidatesConsidered,
    MemorySummary,
    MergedItem,
    RecallContextMessage,
    RecallContextMeta,
    RecallContextResponse,
    RecallMetrics,
    ReferencedMessage,
    ReferencedResult,
    SourceEnvelope,
)
from cairn_embeddings import EmbeddingError
from cairn_providers import TenantEmbedders
from cairn_recall.metrics import DEGRADED
from cairn_recall.service import RecallService
from cairn_recall.shown_set import ShownSetStore, prune_expired
from cairn_scope import Scope
from cairn_servicekit import ServiceClient
from cairn_servicekit.settings import ServiceSettings

log = logging.getLogger(__name__)


class MergedRecallSettings(ServiceSettings):
    """Merged recall's own knobs (env prefix CAIRN_); the diversity knobs live with the knowledge service."""

    recall_context_knowledge_timeout_seconds: float = 3.0
    recall_context_memory_timeout_seconds: float = 5.0
    # The shown-set: how long an article counts as already shown to a session, and how many are read.
    recall_history_ttl_seconds: float = 6 * 3600
    recall_history_max_per_session: int = 1000
    recall_history_prune_interval_seconds: float = 300.0


def tokens_estimate(text: str) -> int:
    """bytes/4 of the text a client would paste: an estimate, never a tokenizer count."""
    return math.ceil(len(text.encode()) / 4)


def knowledge_text(hit: KnowledgeHit) -> str:
    return f"{hit.title}\n{hit.snippet}"


def sort_key(item: MergedItem) -> tuple[float, int, str]:
    """Score DESC (unscored last), then knowledge before memory, then id ASC: a total, stable order."""
    score = -item.score if item.score is not None else math.inf
    return score, 0 if item.source == "knowledge" else 1, item.id


def merge(memory: list[RecallHit], knowledge: list[KnowledgeHit], limit: int) -> tuple[list[MergedItem], int]:
    """The merged, capped, ranked list and the tokens of every candidate the cap could have handed out."""
    items = [
        MergedItem(
            source="memory",
            id=h.memory.id,
            rank=0,
            score=h.score,
            selection_reason=h.selection_reason,
            tokens_estimate=tokens_estimate(h.memory.text),
            memory=MemorySummary(
                id=h.memory.id,
                text=h.memory.text,
                source=h.memory.source,
                confidence=h.memory.confidence,
                tags=h.memory.tags,
                project_id=h.memory.project_id,
                created_at=h.memory.created_at,
            ),
        )
        for h in memory
    ] + [
        MergedItem(
            source="knowledge",
            id=h.id,
            rank=0,
            score=h.score,
            selection_reason=h.selection_reason,
            tokens_estimate=tokens_estimate(knowledge_text(h)),
            article=h,
        )
        for h in knowledge
    ]
    candidates_tokens = sum(i.tokens_estimate for i in items)
    ranked = sorted(items, key=sort_key)[:limit]
    for rank, item in enumerate(ranked, start=1):
        item.rank = rank
    return ranked, candidates_tokens


class MergedRecall:
    def __init__(
        self,
        sessionmaker: async_sessionmaker[AsyncSession],
        reads: async_sessionmaker[AsyncSession],
        recall: RecallService,
        embedders: TenantEmbedders,
        services: ServiceClient,
        settings: MergedRecallSettings,
    ) -> None:
        self._sm = sessionmaker
        self._reads = reads  # AUTOCOMMIT: one statement, one round trip (the shown-set read and record)
        self._recall = recall
        self._embedders = embedders
        self._services = services
        self._settings = settings

    async def _seen(self, scope: Scope, session_id: str | None) -> list[str]:
        if session_id is None:
            return []
        async with self._reads() as session:
            return await ShownSetStore(session).seen(
                scope, session_id, self._settings.recall_history_max_per_session
            )

    async def _memory(
        self, scope: Scope, req: RecallContextMessage, embedded: "asyncio.Future[list[float]]"
    ) -> tuple[list[RecallHit], RecallMeta]:
        request = RecallRequest(query=req.query, limit=req.limit, project_id=req.project_id)
        # The shared embedding is shielded: this half's timeout must not cancel it for the other half. Memory
        # recall's keyword side starts at once; only its vector side waits for the embedding.
        return await asyncio.wait_for(
            self._recall.recall(scope, request, asyncio.shield(embedded)),
            self._settings.recall_context_memory_timeout_seconds,
        )

    async def _vector(
        self, scope: Scope, embedded: "asyncio.Future[list[float]]"
    ) -> tuple[list[float] | None, str | None]:
        """The shared query vector and its model for the knowledge half; without one, the knowledge service
        embeds (or degrades) on its own."""
        try:
            vector = await asyncio.shield(embedded)
        except EmbeddingError:
            return None, None
        return vector, (await self._embedders.for_tenant(scope.tenant_id)).name

    async def _knowledge(
        self, scope: Scope, req: RecallContextMessage, embedded: "asyncio.Future[list[float]]"
    ) -> tuple[list[KnowledgeHit], KnowledgeSearchMeta]:
        seen: list[str] = []
        if req.session_id is None:
            vector, model = await self._vector(scope, embedded)
        else:
            seen, (vector, model) = await asyncio.gather(
                self._seen(scope, req.session_id), self._vector(scope, embedded)
            )
        message = KnowledgeSearchMessage(
            query=req.query,
            limit=req.limit,
            project_id=req.project_id,
            reduce=True,
            seen_ids=seen,
            diversity=req.diversity,
            query_vector=vector,
            query_vector_model=model,
        )
        reply = await self._services.request(
            subjects.KNOWLEDGE_SEARCH,
            scope,
            message,
            timeout=self._settings.recall_context_knowledge_timeout_seconds,
        )
        hits = [KnowledgeHit.model_validate(h) for h in reply.data]
        return hits, KnowledgeSearchMeta.model_validate(reply.meta)

    async def recall_context(self, scope: Scope, req: RecallContextMessage) -> RecallContextResponse:
        recall_id = str(uuid.uuid4())
        # One embedding for both halves; each half starts as soon as its own inputs are there (the memory
        # half needs no shown-set).
        embedded = asyncio.ensure_future(self._recall.embed_query(scope.tenant_id, req.query))
        # The knowledge half is the longer one (a NATS hop and its own statements): it is started first, so
        # its request leaves before the memory half's statements are built.
        knowledge_result, memory_result = await asyncio.gather(
            self._knowledge(scope, req, embedded),
            self._memory(scope, req, embedded),
            return_exceptions=True,
        )
        reasons: list[str] = []
        memory_hits: list[RecallHit] = []
        memory_meta: dict[str, Any] = {}
        if isinstance(memory_result, BaseException):
            reasons.append(_failure("memory", memory_result))
            memory_meta = {"error": reasons[-1]}
        else:
            memory_hits, recalled = memory_result
            memory_meta = recalled.model_dump(exclude_none=True)
            if recalled.fallback:
                reasons.append(f"memory_fallback:{recalled.reason}")
        knowledge_hits: list[KnowledgeHit] = []
        knowledge_meta: KnowledgeSearchMeta | None = None
        if isinstance(knowledge_result, BaseException):
            reasons.append(_failure("knowledge", knowledge_result))
        else:
            knowledge_hits, knowledge_meta = knowledge_result
            if knowledge_meta.fallback:
                reasons.append(f"knowledge_fallback:{knowledge_meta.reason}")

        for part in {r.split(":")[0].split("_")[0] for r in reasons}:
            DEGRADED.labels(part).inc()  # "memory" or "knowledge"
        data, tokens_candidates = merge(memory_hits, knowledge_hits, req.limit)
        surfaced = [i.id for i in data if i.source == "knowledge"]
        # Committed before the reply leaves (a client may post `referenced` right after it), but written
        # while the rest of the response is built.
        recording = asyncio.ensure_future(self._record(scope, recall_id, req.session_id, surfaced))
        tokens_selected = sum(i.tokens_estimate for i in data)
        knowledge_pool = knowledge_meta.candidates if knowledge_meta else 0
        meta = RecallContextMeta(
            recall_id=recall_id,
            limit=req.limit,
            candidates_considered=CandidatesConsidered(
                memory=len(memory_hits), knowledge=knowledge_pool, total=len(memory_hits) + knowledge_pool
            ),
            selected_count=len(data),
            memory_count=len(data) - len(surfaced),
            knowledge_count=len(surfaced),
            tokens_selected=tokens_selected,
            tokens_candidates=tokens_candidates,
            tokens_saved_vs_candidates=tokens_candidates - tokens_selected,
            answer_confidence=knowledge_meta.answer_confidence if knowledge_meta else "none",
            provenance=knowledge_meta.provenance if knowledge_meta else "none",
            confidence=knowledge_meta.confidence if knowledge_meta else None,
            degraded=bool(reasons),
            degraded_reason="; ".join(reasons) if reasons else None,
            diversity=knowledge_meta.diversity if knowledge_meta else None,
            session_id=req.session_id,
        )
        knowledge_envelope = SourceEnvelope(
            data=[h.model_dump(mode="json") for h in knowledge_hits],
            meta=knowledge_meta.model_dump(exclude_none=True) if knowledge_meta else {"error": reasons[-1]},
        )
        response = RecallContextResponse(
            data=data,
            memory=SourceEnvelope(data=[h.model_dump(mode="json") for h in memory_hits], meta=memory_meta),
            knowledge=knowledge_envelope,
            meta=meta,
        )
        await recording
        return response

    async def _record(
        self, scope: Scope, recall_id: str, session_id: str | None, surfaced: list[str]
    ) -> None:
        if not surfaced:
            return
        try:
            async with self._reads() as session:
                await ShownSetStore(session).record(
                    scope, recall_id, session_id, surfaced, self._settings.recall_history_ttl_seconds
                )
        except Exception:
            # e.g. an article deleted since the search: the answer stands; only its funnel row is lost.
            log.warning("merged recall: recording surfaced articles failed", exc_info=True)

    async def referenced(self, scope: Scope, req: ReferencedMessage) -> ReferencedResult:
        """Accept only articles this recall surfaced in the caller's tenant; anything else writes nothing."""
        async with self._sm.begin() as session:
            store = ShownSetStore(session)
            surfaced = await store.surfaced_among(scope, req.recall_id, req.article_ids)
            if surfaced != set(req.article_ids):
                raise NotSurfaced()
            recorded = await store.reference(scope, req.recall_id, req.article_ids)
        return ReferencedResult(recall_id=req.recall_id, article_ids=req.article_ids, recorded=recorded)

    async def metrics(self, scope: Scope) -> RecallMetrics:
        async with self._sm() as session:
            surfaced, referenced = await ShownSetStore(session).funnel(scope)
        return RecallMetrics(
            tenant_id=scope.tenant_id,
            surfaced=surfaced,
            referenced=referenced,
            reference_rate=referenced / surfaced if surfaced else None,
        )

    async def prune_loop(self) -> None:
        while True:
            try:
                async with self._sm.begin() as session:
                    await prune_expired(session)
            except Exception:
                log.warning("shown-set prune failed; retrying next interval", exc_info=True)
            await asyncio.sleep(self._settings.recall_history_prune_interval_seconds)


def _failure(side: str, exc: BaseException) -> str:
    if isinstance(exc, asyncio.TimeoutError | TimeoutError):
        return f"{side}_timeout"
    if isinstance(exc, CairnError):
        return f"{side}_unavailable:{exc.body().code}"
    if isinstance(exc, ValidationError):
        return f"{side}_invalid_reply"
    log.error("merged recall: %s half failed", side, exc_info=exc)
    return f"{side}_error"
