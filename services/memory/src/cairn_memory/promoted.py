"""Persisting promotion survivors: embedded at write time, so near-duplicates are caught before they land.

Exact content hash -> no-op. A paraphrase above the near-duplicate threshold supersedes the prior
*promoted* row (never an explicit one). A new value for a slot a live promoted row holds ("the standup
moved to 10:00" for slot `standup|is`) supersedes it too, though the two are not paraphrases:
`metadata.supersede_reason` says which ("paraphrase" or "updated") on both rows. A subject at quota drops the rest, counted.
"""

import uuid
from typing import Any

from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from cairn_contracts.errors import Forbidden, ServiceUnavailable
from cairn_contracts.memory import Source
from cairn_contracts.promotion import (
    EVAL_SUBJECT_ID,
    Candidate,
    PersistPromotedRequest,
    PersistPromotedResult,
)
from cairn_embeddings import EmbeddingError, content_hash
from cairn_memory.chunks import embed_with_chunks, replace_chunks
from cairn_memory.settings import MemorySettings
from cairn_memory.store import MemoryStore
from cairn_providers import TenantEmbedders
from cairn_scope import Scope, check_scoped
from cairn_storage.models import Memory
from cairn_storage.usage import UsageMeter, estimate_tokens


class PromotedWriter:
    def __init__(
        self,
        sessionmaker: async_sessionmaker[AsyncSession],
        embedders: TenantEmbedders,
        settings: MemorySettings,
        meter: UsageMeter,
    ) -> None:
        self._sm = sessionmaker
        self._embedders = embedders
        self._settings = settings
        self._meter = meter

    async def persist(self, scope: Scope, req: PersistPromotedRequest) -> PersistPromotedResult:
        if scope.subject_id == EVAL_SUBJECT_ID:
            raise Forbidden("the promotion eval subject is never persisted")
        result = PersistPromotedResult()
        if not req.candidates:
            return result
        embedder = await self._embedders.for_tenant(scope.tenant_id)
        try:
            vectors = await embed_with_chunks(embedder, [c.text for c in req.candidates])
        except EmbeddingError as exc:
            raise ServiceUnavailable(f"embedding unavailable: {exc}") from None  # the activity retries
        self._meter.add(scope.tenant_id, "embedded_tokens", estimate_tokens(c.text for c in req.candidates))
        async with self._sm.begin() as session:
            store = MemoryStore(session)
            live = await store.lock_live_count(scope)
            quota = await store.quota(scope.tenant_id, self._settings.default_memory_quota)
            for candidate, (vector, *chunk_vectors) in zip(req.candidates, vectors, strict=True):
                digest = content_hash(candidate.text)
                if await self._has_promoted_hash(session, scope, digest):
                    result.deduped += 1
                    continue
                near = await self._nearest_live_promoted(session, scope, vector)
                reason = "paraphrase"
                if near is None and candidate.slot is not None:
                    near = await self._live_promoted_in_slot(session, scope, candidate.slot)
                    reason = "updated"
                if near is None and live >= quota:
                    result.dropped_quota += 1
                    continue
                new_id = uuid.uuid4()
                await session.execute(
                    insert(Memory)
                    .values(
                        id=new_id,
                        tenant_id=uuid.UUID(scope.tenant_id),
                        subject_id=scope.subject_id,
                        text=candidate.text,
                        embedding=vector,
                        embedding_content_hash=digest,
                        embedding_model=embedder.name,
                        confidence=candidate.confidence,
                        source=Source.promoted.value,
                        source_session_id=req.session_id,
                        tags=candidate.tags,
                        metadata_=_metadata(candidate, near, reason),
                    )
                    .on_conflict_do_nothing()
                )
                if chunk_vectors:
                    await replace_chunks(
                        session, uuid.UUID(scope.tenant_id), scope.subject_id, new_id, chunk_vectors
                    )
                result.memory_ids.append(str(new_id))
                if near is not None:
                    near.superseded_by = new_id
                    near.metadata_ = {**(near.metadata_ or {}), "supersede_reason": reason}
                    result.superseded += 1
                else:
                    live += 1
                    result.promoted += 1
        self._meter.add(scope.tenant_id, "writes", len(result.memory_ids))  # inserted rows
        return result

    async def _live_promoted_in_slot(self, session: AsyncSession, scope: Scope, slot: str) -> Memory | None:
        """The live promoted memory holding this slot (the newest, should there be several)."""
        stmt = check_scoped(
            select(Memory)
            .where(
                Memory.tenant_id == scope.tenant_id,
                Memory.subject_id == scope.subject_id,
                Memory.source == Source.promoted.value,
                Memory.superseded_by.is_(None),
                Memory.metadata_["slot"].astext == slot,
            )
            .order_by(Memory.created_at.desc())
            .limit(1),
            scope,
        )
        found: Memory | None = await session.scalar(stmt)
        return found

    async def _has_promoted_hash(self, session: AsyncSession, scope: Scope, digest: str) -> bool:
        stmt = check_scoped(
            select(Memory.id)
            .where(
                Memory.tenant_id == scope.tenant_id,
                Memory.subject_id == scope.subject_id,
                Memory.source == Source.promoted.value,
                Memory.embedding_content_hash == digest,
            )
            .limit(1),
            scope,
        )
        return (await session.scalar(stmt)) is not None

    async def _nearest_live_promoted(
        self, session: AsyncSession, scope: Scope, vector: list[float]
    ) -> Memory | None:
        distance = Memory.embedding.cosine_distance(vector)
        stmt = check_scoped(
            select(Memory, distance.label("distance"))
            .where(
                Memory.tenant_id == scope.tenant_id,
                Memory.subject_id == scope.subject_id,
                Memory.source == Source.promoted.value,
                Memory.superseded_by.is_(None),
                Memory.embedding.is_not(None),
            )
            .order_by(distance)
            .limit(1),
            scope,
        )
        row = (await session.execute(stmt)).first()
        if row is None or 1 - row.distance < self._settings.promotion_near_duplicate_threshold:
            return None
        found: Memory = row.Memory
        return found


def _metadata(candidate: Candidate, superseded: Memory | None, reason: str) -> dict[str, Any]:
    """A promoted memory's metadata: its slot (so a later new value can find it), what it replaced, and
    the knowledge articles it links (already cut by the workflow to those the subject can see)."""
    metadata: dict[str, Any] = {"slot": candidate.slot} if candidate.slot is not None else {}
    if candidate.cross_links:
        metadata["cross_links"] = list(candidate.cross_links)
    if superseded is not None:
        metadata.update(supersedes=str(superseded.id), supersede_reason=reason)
    return metadata
