"""The novelty gate: the one function every write-back goes through (agent proposals now, graduation's
hot memories next).

Verdicts, in order: the proposer can already see an article with this exact body (or from this source
memory) -> `duplicate`; the title is taken in the proposal's visibility scope -> `deduplicated`; the
proposal is at least `near_dup_threshold` similar to a visible published article -> `gated_to_draft`
(a draft only the proposer sees); otherwise `created` (published). The vector is needed before anything
is decided, so a down embedder is `gate_unavailable` with nothing written. The insert meets the articles'
partial unique indexes, so two concurrent identical proposals produce exactly one article: the loser
reads the winner and answers `duplicate` / `deduplicated`.
"""

import logging
import uuid

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from cairn_contracts.errors import Conflict, GateUnavailable, InvalidProjectId
from cairn_contracts.knowledge import (
    ArticleSource,
    ArticleStatus,
    ProposeRequest,
    ProposeResult,
    Verdict,
    Visibility,
)
from cairn_embeddings import EmbedderUnavailable, EmbeddingError, content_hash
from cairn_embeddings.chunking import chunk_text
from cairn_knowledge.convert import article_out
from cairn_knowledge.store import KnowledgeStore
from cairn_providers import TenantEmbedders
from cairn_scope import Scope
from cairn_storage.models import Article
from cairn_storage.usage import UsageMeter, estimate_tokens

log = logging.getLogger(__name__)


def embedded_text(title: str, body: str) -> str:
    """What an article's vectors are computed from: its title, then its body."""
    return f"{title}\n\n{body}"


def decide(
    *,
    same_body: bool,
    same_title: bool,
    nearest_similarity: float | None,
    threshold: float,
) -> Verdict:
    """The verdict from what the proposer can see (pure; the order is the gate's contract)."""
    if same_body:
        return Verdict.duplicate
    if same_title:
        return Verdict.deduplicated
    if nearest_similarity is not None and nearest_similarity >= threshold:
        return Verdict.gated_to_draft
    return Verdict.created


class NoveltyGate:
    def __init__(
        self,
        sessionmaker: async_sessionmaker[AsyncSession],
        embedders: TenantEmbedders,
        near_dup_threshold: float,
        max_chunks: int,
        meter: UsageMeter,
    ) -> None:
        self._meter = meter
        self._sm = sessionmaker
        self._embedders = embedders
        self._threshold = near_dup_threshold
        self._max_chunks = max_chunks

    async def _embed(self, tenant_id: str, title: str, body: str) -> tuple[list[list[float]], str]:
        embedder = await self._embedders.for_tenant(tenant_id)
        try:
            chunks = chunk_text(embedded_text(title, body))[: self._max_chunks]
            vectors = await embedder.embed(chunks)
            self._meter.add(tenant_id, "embedded_tokens", estimate_tokens(chunks))
        except (EmbedderUnavailable, EmbeddingError) as exc:
            log.warning("novelty gate unavailable: %s", exc)
            raise GateUnavailable() from None
        return vectors, embedder.name

    async def _existing(
        self, store: KnowledgeStore, scope: Scope, req: ProposeRequest, body_hash: str
    ) -> tuple[Verdict, Article] | None:
        if req.source_memory_id and (found := await store.by_source_memory(scope, req.source_memory_id)):
            return Verdict.duplicate, found
        if found := await store.by_content_hash(scope, body_hash):
            return Verdict.duplicate, found
        if found := await store.by_title(scope, req.title, req.visibility):
            return Verdict.deduplicated, found
        return None

    async def propose(self, scope: Scope, req: ProposeRequest) -> ProposeResult:
        req = req.model_copy(update={"title": req.title.strip()})
        body_hash = content_hash(req.body)
        if req.project_id:
            async with self._sm() as session:
                if not await KnowledgeStore(session).project_in_tenant(req.project_id, scope.tenant_id):
                    raise InvalidProjectId()
        # Cheap exits first: an exact or same-title repeat never costs an embedding.
        async with self._sm() as session:
            existing = await self._existing(KnowledgeStore(session), scope, req, body_hash)
        if existing is not None:
            verdict, prior = existing
            return ProposeResult(verdict=verdict, created=False, article=article_out(prior))
        vectors, model = await self._embed(scope.tenant_id, req.title, req.body)
        async with self._sm.begin() as session:
            store = KnowledgeStore(session)
            # Proposals of the same body or title in a tenant serialise here, and the exact checks run
            # again under the lock: a racer that committed first is then a duplicate, never a near-copy
            # that would slip in as a draft beside it (the unique indexes do not span drafts and
            # published rows).
            for key in sorted(
                (
                    f"article-hash:{scope.tenant_id}:{body_hash}",
                    f"article-title:{scope.tenant_id}:{req.title.lower()}",
                )
            ):
                await session.execute(
                    text("SELECT pg_advisory_xact_lock(hashtextextended(:k, 0))"), {"k": key}
                )
            if (existing := await self._existing(store, scope, req, body_hash)) is not None:
                verdict, prior = existing
                return ProposeResult(verdict=verdict, created=False, article=article_out(prior))
            nearest = await store.nearest_published(scope, vectors[0])
            verdict = decide(
                same_body=False,
                same_title=False,
                nearest_similarity=nearest[1] if nearest else None,
                threshold=self._threshold,
            )
            status = ArticleStatus.draft if verdict is Verdict.gated_to_draft else ArticleStatus.published
            inserted = await store.insert(
                {
                    "id": uuid.uuid4(),
                    "tenant_id": uuid.UUID(scope.tenant_id),
                    "title": req.title,
                    "body": req.body,
                    "category": req.category,
                    "tags": list(dict.fromkeys(req.tags)),
                    "status": status.value,
                    "visibility": req.visibility.value,
                    "owner_subject_id": scope.subject_id if req.visibility is Visibility.owner else None,
                    "proposer_subject_id": scope.subject_id,
                    "project_id": uuid.UUID(req.project_id) if req.project_id else None,
                    "source": req.source.value,
                    "source_memory_id": req.source_memory_id
                    if req.source is ArticleSource.graduated or req.source_memory_id
                    else None,
                    "content_hash": body_hash,
                    "embedding": vectors[0],
                    "embedding_content_hash": content_hash(embedded_text(req.title, req.body)),
                    "embedding_model": model,
                    "created_by": scope.key_id,
                },
                vectors[1:],
            )
            if inserted is not None:
                return ProposeResult(verdict=verdict, created=True, article=article_out(inserted))
            # A concurrent identical proposal won the constraint; this statement sees its committed row.
            existing = await self._existing(store, scope, req, body_hash)
        if existing is None:
            raise Conflict("a concurrent proposal holds this article; retry")
        verdict, found = existing
        return ProposeResult(verdict=verdict, created=False, article=article_out(found))
