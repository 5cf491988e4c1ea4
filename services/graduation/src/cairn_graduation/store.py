"""Every graduation query: the memory in its own scope, the first-graduation stamp, the sweep's claim."""

import uuid
from datetime import datetime

from sqlalchemy import func, or_, text
from sqlalchemy.ext.asyncio import AsyncSession

from cairn_contracts.graduation import GraduatedScope, MemorySnapshot, StampResult, SweepCandidate
from cairn_scope import Scope, scoped_select, scoped_update
from cairn_storage.models import Memory


def parse_memory_id(memory_id: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(memory_id)
    except (ValueError, TypeError, AttributeError):
        return None


def snapshot(row: Memory) -> MemorySnapshot:
    scope: GraduatedScope | None = None
    if row.graduated_scope in ("project", "global"):
        scope = "project" if row.graduated_scope == "project" else "global"
    return MemorySnapshot(
        id=str(row.id),
        text=row.text,
        project_id=str(row.project_id) if row.project_id else None,
        tags=list(row.tags or []),
        graduated_at=row.graduated_at,
        graduated_article_id=str(row.graduated_article_id) if row.graduated_article_id else None,
        graduated_scope=scope,
    )


class GraduationStore:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def memory(self, scope: Scope, memory_id: str) -> MemorySnapshot | None:
        """The memory if it is the scope's own (a foreign or unknown id reads as None: no oracle)."""
        mid = parse_memory_id(memory_id)
        if mid is None:
            return None
        row = (await self.session.execute(scoped_select(Memory, scope).where(Memory.id == mid))).scalar()
        return snapshot(row) if row is not None else None

    async def stamp(
        self, scope: Scope, memory_id: str, article_id: str, graduated: GraduatedScope, stale: str | None
    ) -> StampResult | None:
        """The first-graduation write, decided by the database: a conditional UPDATE that only an
        unstamped memory (or one whose stamped article `stale` is gone) matches. Row-locked, so of two
        concurrent stampers exactly one wins; the loser reads the winner's stamp. None: no such memory."""
        mid = uuid.UUID(memory_id)
        unstamped = Memory.graduated_at.is_(None)
        condition = (
            unstamped if stale is None else or_(unstamped, Memory.graduated_article_id == uuid.UUID(stale))
        )
        stmt = (
            scoped_update(Memory, scope)
            .where(Memory.id == mid, condition)
            .values(
                graduated_at=func.now(),
                graduated_article_id=uuid.UUID(article_id),
                graduated_scope=graduated,
            )
            .returning(Memory.id)
        )
        if (await self.session.execute(stmt)).scalar() is not None:
            return StampResult(won=True, article_id=article_id, scope=graduated)
        current = await self.memory(scope, memory_id)
        if current is None:
            return None
        if current.graduated_article_id is None or current.graduated_scope is None:
            raise RuntimeError("a memory the stamp did not match must carry another graduation's stamp")
        return StampResult(won=False, article_id=current.graduated_article_id, scope=current.graduated_scope)

    async def now(self) -> datetime:
        value: datetime = await self.session.scalar(text("SELECT now()"))
        return value

    async def claim_candidates(
        self, since: datetime, limit: int, default_threshold: int, scan_limit: int
    ) -> list[SweepCandidate]:
        """Claim up to `limit` hot, live, not-yet-graduated memories not claimed since `since` (this tick),
        tenants served round-robin: at most `scan_limit` tenants, least recently served first, each taking
        a fair share (ceil(limit / tenants)) of the batch, hottest memory first. Rows read stay near
        `limit + tenants`, however many candidates one tenant holds (both UPDATEs run: PostgreSQL runs
        every data-modifying CTE to completion whether or not the query reads it). Maintenance across scopes: the claim
        reads ids only; every read of a memory's content happens in its own scope."""
        rows = await self.session.execute(
            text(
                """
                WITH hot AS (
                    SELECT t.id AS tenant_id,
                           coalesce(t.graduation_recall_threshold, :threshold) AS threshold,
                           row_number() OVER (ORDER BY t.graduation_served_at NULLS FIRST, t.id) AS ord
                    FROM tenants t
                    WHERE EXISTS (
                        SELECT 1 FROM memory_recalls r JOIN memories m ON m.id = r.memory_id
                        WHERE r.tenant_id = t.id AND NOT r.settled
                          AND r.recall_count >= coalesce(t.graduation_recall_threshold, :threshold)
                          AND m.graduated_at IS NULL AND m.superseded_by IS NULL
                          AND (m.graduation_attempted_at IS NULL OR m.graduation_attempted_at < :since)
                    )
                    ORDER BY t.graduation_served_at NULLS FIRST, t.id
                    LIMIT :scan_limit
                ),
                share AS (
                    -- ceil(limit / tenants) in integers
                    SELECT greatest(1, (:limit + count(*) - 1) / greatest(count(*), 1)) AS per FROM hot
                ),
                picked AS (
                    SELECT c.id, c.tenant_id, c.subject_id, c.rn, h.ord
                    FROM hot h
                    CROSS JOIN share s
                    CROSS JOIN LATERAL (
                        SELECT m.id, m.tenant_id, m.subject_id,
                               row_number() OVER (ORDER BY r.recall_count DESC, r.memory_id) AS rn
                        FROM memory_recalls r JOIN memories m ON m.id = r.memory_id
                        WHERE r.tenant_id = h.tenant_id AND NOT r.settled
                          AND r.recall_count >= h.threshold
                          AND m.graduated_at IS NULL AND m.superseded_by IS NULL
                          AND (m.graduation_attempted_at IS NULL OR m.graduation_attempted_at < :since)
                        ORDER BY r.recall_count DESC, r.memory_id
                        LIMIT s.per
                    ) c
                    ORDER BY c.rn, h.ord
                    LIMIT :limit
                ),
                claimed AS (
                    UPDATE memories m SET graduation_attempted_at = now()
                    FROM picked p WHERE m.id = p.id
                    RETURNING m.id
                ),
                served AS (
                    UPDATE tenants t SET graduation_served_at = now()
                    WHERE t.id IN (SELECT tenant_id FROM picked)
                    RETURNING t.id
                )
                SELECT p.id, p.tenant_id, p.subject_id
                FROM picked p
                WHERE p.id IN (SELECT id FROM claimed)
                ORDER BY p.rn, p.ord
                """
            ),
            {"since": since, "limit": limit, "threshold": default_threshold, "scan_limit": scan_limit},
        )
        return [
            SweepCandidate(tenant_id=str(r.tenant_id), subject_id=r.subject_id, memory_id=str(r.id))
            for r in rows
        ]
