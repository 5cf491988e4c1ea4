"""Merged recall's server-side state in PostgreSQL, shared by every recall replica: the shown-set
(articles already shown to one session of one subject, with a TTL) and the article access funnel
(`surfaced` rows written at recall time, `referenced` rows a client asserts later).

Every statement is bound to the caller's tenant (and, for the shown-set, its subject): a session token
another tenant or another agent picks can never suppress your rows, and no recall_id reveals anything
across tenants.
"""

import uuid
from datetime import UTC, datetime, timedelta

from sqlalchemy import delete, func, select, text
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from cairn_scope import Scope
from cairn_storage.models import ArticleAccessEvent, RecallShown

SURFACED = "surfaced"
REFERENCED = "referenced"


class ShownSetStore:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def seen(self, scope: Scope, session_id: str, cap: int) -> list[str]:
        """The articles shown to this (tenant, subject, session) that have not expired, newest first."""
        stmt = (
            select(RecallShown.article_id)
            .where(
                RecallShown.tenant_id == uuid.UUID(scope.tenant_id),
                RecallShown.subject_id == scope.subject_id,
                RecallShown.session_id == session_id,
                RecallShown.expires_at > func.now(),
            )
            .order_by(RecallShown.shown_at.desc())
            .limit(cap)
        )
        return [str(a) for a in (await self.session.execute(stmt)).scalars()]

    async def record(
        self,
        scope: Scope,
        recall_id: str,
        session_id: str | None,
        article_ids: list[str],
        ttl_seconds: float,
    ) -> None:
        """Stamp what this recall surfaced: access events under the recall_id, and the shown-set."""
        if not article_ids:
            return
        # Visible to every session at once; only a crash in the next few ms could lose it (best effort).
        await self.session.execute(text("SET LOCAL synchronous_commit = off"))
        tenant = uuid.UUID(scope.tenant_id)
        await self.session.execute(
            insert(ArticleAccessEvent)
            .values(
                [
                    {
                        "tenant_id": tenant,
                        "article_id": uuid.UUID(a),
                        "access_type": SURFACED,
                        "origin_search_id": uuid.UUID(recall_id),
                        "subject_id": scope.subject_id,
                        "key_id": scope.key_id,
                    }
                    for a in article_ids
                ]
            )
            .on_conflict_do_nothing()
        )
        if session_id is None:
            return
        now = datetime.now(UTC)
        expires = now + timedelta(seconds=ttl_seconds)
        stmt = insert(RecallShown).values(
            [
                {
                    "tenant_id": tenant,
                    "subject_id": scope.subject_id,
                    "session_id": session_id,
                    "article_id": uuid.UUID(a),
                    "shown_at": now,
                    "expires_at": expires,
                }
                for a in article_ids
            ]
        )
        await self.session.execute(
            stmt.on_conflict_do_update(
                index_elements=["tenant_id", "subject_id", "session_id", "article_id"],
                set_={"shown_at": stmt.excluded.shown_at, "expires_at": stmt.excluded.expires_at},
            )
        )

    async def surfaced_among(self, scope: Scope, recall_id: str, article_ids: list[str]) -> set[str]:
        stmt = select(ArticleAccessEvent.article_id).where(
            ArticleAccessEvent.tenant_id == uuid.UUID(scope.tenant_id),
            ArticleAccessEvent.origin_search_id == uuid.UUID(recall_id),
            ArticleAccessEvent.access_type == SURFACED,
            ArticleAccessEvent.article_id.in_([uuid.UUID(a) for a in article_ids]),
        )
        return {str(a) for a in (await self.session.execute(stmt)).scalars()}

    async def reference(self, scope: Scope, recall_id: str, article_ids: list[str]) -> int:
        """Record `referenced` rows; a pair already recorded is a no-op. Returns the new rows."""
        rows = await self.session.execute(
            insert(ArticleAccessEvent)
            .values(
                [
                    {
                        "tenant_id": uuid.UUID(scope.tenant_id),
                        "article_id": uuid.UUID(a),
                        "access_type": REFERENCED,
                        "origin_search_id": uuid.UUID(recall_id),
                        "subject_id": scope.subject_id,
                        "key_id": scope.key_id,
                    }
                    for a in article_ids
                ]
            )
            .on_conflict_do_nothing()
            .returning(ArticleAccessEvent.id)
        )
        return len(rows.all())

    async def funnel(self, scope: Scope) -> tuple[int, int]:
        """(surfaced, referenced) over distinct (recall_id, article_id) pairs of the tenant (the unique
        constraint makes one row per pair and type)."""
        stmt = (
            select(ArticleAccessEvent.access_type, func.count())
            .where(ArticleAccessEvent.tenant_id == uuid.UUID(scope.tenant_id))
            .group_by(ArticleAccessEvent.access_type)
        )
        counts = {t: int(n) for t, n in (await self.session.execute(stmt)).all()}
        return counts.get(SURFACED, 0), counts.get(REFERENCED, 0)


async def prune_expired(session: AsyncSession) -> int:
    """Maintenance across every scope: drop expired shown-set rows (reads already ignore them)."""
    result = await session.execute(delete(RecallShown).where(RecallShown.expires_at <= func.now()))
    return int(result.rowcount or 0)  # type: ignore[attr-defined]
