"""Every promotion query: session turns, watermarks, budget reservations, sweep candidates."""

import uuid

from sqlalchemy import delete, func, select, text, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from cairn_contracts.errors import BudgetExceeded
from cairn_contracts.promotion import EVAL_SUBJECT_ID, SweepCandidate, Turn
from cairn_scope import Scope, check_scoped, scoped_select
from cairn_storage.models import PromotionRun, SessionMemory, SessionPromotion, Tenant


class PromotionStore:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def turns(self, scope: Scope, session_id: str) -> list[Turn]:
        """The subject's live turns of this session in insertion order (a foreign session reads empty)."""
        stmt = (
            scoped_select(SessionMemory, scope)
            .where(SessionMemory.session_id == session_id, SessionMemory.expires_at > func.now())
            .order_by(SessionMemory.seq)
        )
        rows = (await self.session.execute(stmt)).scalars().all()
        return [Turn(role=r.role, content=r.content, at=r.created_at) for r in rows]

    async def watermark(self, scope: Scope, session_id: str) -> str | None:
        stmt = check_scoped(
            select(SessionPromotion.fingerprint).where(
                SessionPromotion.tenant_id == scope.tenant_id,
                SessionPromotion.subject_id == scope.subject_id,
                SessionPromotion.session_id == session_id,
            ),
            scope,
        )
        fingerprint: str | None = await self.session.scalar(stmt)
        return fingerprint

    async def advance_watermark(
        self, scope: Scope, session_id: str, fingerprint: str, promoted: int, dropped: int
    ) -> None:
        stmt = insert(SessionPromotion).values(
            id=uuid.uuid4(),
            tenant_id=uuid.UUID(scope.tenant_id),
            subject_id=scope.subject_id,
            session_id=session_id,
            fingerprint=fingerprint,
            promoted_count=promoted,
            dropped_count=dropped,
        )
        stmt = stmt.on_conflict_do_update(
            index_elements=["tenant_id", "subject_id", "session_id"],
            set_={
                "fingerprint": fingerprint,
                "promoted_count": promoted,
                "dropped_count": dropped,
                "updated_at": func.now(),
            },
        )
        await self.session.execute(stmt)

    async def reserve(self, scope: Scope, session_id: str, default_budget: int) -> str:
        """Take one compile from the tenant's hourly budget, counting finished and in-flight runs alike,
        under a per-tenant lock so concurrent triggers cannot overshoot."""
        tenant = uuid.UUID(scope.tenant_id)
        await self.session.execute(
            text("SELECT pg_advisory_xact_lock(hashtextextended(:k, 0))"), {"k": f"promotion-budget:{tenant}"}
        )
        budget = await self.session.scalar(
            select(Tenant.promotion_budget_per_hour).where(Tenant.id == tenant)
        )
        budget = default_budget if budget is None else budget
        used = await self.session.scalar(
            select(func.count())
            .select_from(PromotionRun)
            .where(
                PromotionRun.tenant_id == tenant,
                PromotionRun.reserved_at > func.now() - text("interval '1 hour'"),
            )
        )
        if (used or 0) >= budget:
            raise BudgetExceeded(f"this tenant's promotion budget of {budget} compiles per hour is spent")
        run_id = uuid.uuid4()
        self.session.add(
            PromotionRun(id=run_id, tenant_id=tenant, subject_id=scope.subject_id, session_id=session_id)
        )
        await self.session.flush()
        return str(run_id)

    async def release(self, reservation_id: str) -> None:
        """Give a reservation back (the trigger joined a run already holding one)."""
        await self.session.execute(delete(PromotionRun).where(PromotionRun.id == uuid.UUID(reservation_id)))

    async def finish(self, reservation_id: str, status: str) -> None:
        await self.session.execute(
            update(PromotionRun)
            .where(PromotionRun.id == uuid.UUID(reservation_id))
            .values(status=status, finished_at=func.now())
        )

    async def sweep_candidates(self, window_seconds: int, limit: int) -> list[SweepCandidate]:
        """Sessions with a turn inside the window whose content differs from their watermark, the one
        nearest its expiry first (maintenance across scopes; the eval subject is never swept)."""
        rows = await self.session.execute(
            text(
                """
                SELECT s.tenant_id, s.subject_id, s.session_id, min(s.expires_at) AS first_expiry
                FROM session_memories s
                WHERE s.expires_at > now() AND s.subject_id <> :eval
                GROUP BY s.tenant_id, s.subject_id, s.session_id
                HAVING max(s.created_at) > now() - make_interval(secs => :window) AND count(*) >= 2
                ORDER BY first_expiry, max(s.seq)
                LIMIT :limit
                """
            ),
            {"eval": EVAL_SUBJECT_ID, "window": window_seconds, "limit": limit},
        )
        return [
            SweepCandidate(tenant_id=str(r.tenant_id), subject_id=r.subject_id, session_id=r.session_id)
            for r in rows
        ]
