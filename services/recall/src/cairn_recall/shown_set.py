"""Merged recall's server-side state in PostgreSQL, shared by every recall replica: the shown-set
(articles already shown to one session of one subject, with a TTL) and the article access funnel
(`surfaced` rows written at recall time, `referenced` rows a client asserts later).

Every statement is bound to the caller's tenant (and, for the shown-set, its subject): a session token
another tenant or another agent picks can never suppress your rows, and no recall_id reveals anything
across tenants.
"""

import uuid

from sqlalchemy import delete, func, select, text
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from cairn_scope import Scope
from cairn_storage.models import ArticleAccessEvent, RecallShown

SURFACED = "surfaced"
REFERENCED = "referenced"


# One statement (one round trip on an AUTOCOMMIT session, one commit): the events, then the shown-set when
# the recall named a session. Visible to every session at once; `synchronous_commit` off for its own
# transaction, so only a crash in the next few ms could lose it (best effort, like the whole funnel row).
_RECORD = text(
    f"""
WITH config AS MATERIALIZED (SELECT set_config('synchronous_commit', 'off', true) AS applied),
events AS (
    INSERT INTO article_access_events (tenant_id, article_id, access_type, origin_search_id, subject_id, key_id)
    SELECT :tenant_id, a, '{SURFACED}', :recall_id, :subject_id, :key_id
    FROM unnest(CAST(:ids AS uuid[])) AS a CROSS JOIN config
    ON CONFLICT DO NOTHING
)
INSERT INTO recall_shown (tenant_id, subject_id, session_id, article_id, shown_at, expires_at)
SELECT :tenant_id, :subject_id, CAST(:session_id AS text), a, now(),
       now() + make_interval(secs => CAST(:ttl AS float8))
FROM unnest(CAST(:ids AS uuid[])) AS a CROSS JOIN config
WHERE CAST(:session_id AS text) IS NOT NULL
ON CONFLICT (tenant_id, subject_id, session_id, article_id)
    DO UPDATE SET shown_at = EXCLUDED.shown_at, expires_at = EXCLUDED.expires_at
"""
)


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
        params = {
            "tenant_id": uuid.UUID(scope.tenant_id),
            "subject_id": scope.subject_id,
            "key_id": scope.key_id,
            "recall_id": uuid.UUID(recall_id),
            "session_id": session_id,
            "ids": [uuid.UUID(a) for a in article_ids],
            "ttl": ttl_seconds,
        }
        await self.session.execute(_RECORD, params)

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
