"""Every promotion query: session turns, watermarks, budget reservations, sweep candidates."""

import uuid
from typing import Literal

from pydantic import BaseModel
from sqlalchemy import delete, func, select, text, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from cairn_contracts.errors import BudgetExceeded
from cairn_contracts.promotion import EVAL_SUBJECT_ID, SweepCandidate, Turn
from cairn_promotion.compiler import session_fingerprint
from cairn_scope import Scope, check_scoped, scoped_select
from cairn_storage.models import PromotionRun, SessionMemory, SessionPromotion, Tenant


class Reservation(BaseModel):
    """The outcome of `PromotionStore.reserve`: a budget unit for a new run, or why none is needed."""

    status: Literal["reserved", "unchanged", "running"]
    run_id: str | None = None


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

    async def reserve(self, scope: Scope, session_id: str, default_budget: int) -> Reservation:
        """Take one compile from the tenant's hourly budget, counting finished and in-flight runs alike,
        under a per-tenant lock so concurrent triggers cannot overshoot.

        Under the same lock, the session is re-checked: a run of it still in flight (`running`), or a
        watermark that already covers its turns (`unchanged`), takes nothing. The trigger and the sweep
        both look before they reserve, but a run can finish in between, and a finished workflow id may
        start again. In-flight is checked first: a run advances the watermark before it finishes, so a
        run that finished between the two reads has already moved the watermark the second read sees.
        """
        tenant = uuid.UUID(scope.tenant_id)
        await self.session.execute(
            text("SELECT pg_advisory_xact_lock(hashtextextended(:k, 0))"), {"k": f"promotion-budget:{tenant}"}
        )
        if await self._in_flight(tenant, scope.subject_id, session_id):
            return Reservation(status="running")
        fingerprint = session_fingerprint(await self.turns(scope, session_id))
        if fingerprint == await self.watermark(scope, session_id):
            return Reservation(status="unchanged")
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
        return Reservation(status="reserved", run_id=str(run_id))

    async def _in_flight(self, tenant: uuid.UUID, subject_id: str, session_id: str) -> bool:
        """A run of this session reserved within the budget hour and not finished. Bounded by the hour
        (the budget index serves it) so a reservation whose workflow never started blocks no longer."""
        found = await self.session.scalar(
            select(PromotionRun.id)
            .where(
                PromotionRun.tenant_id == tenant,
                PromotionRun.reserved_at > func.now() - text("interval '1 hour'"),
                PromotionRun.subject_id == subject_id,
                PromotionRun.session_id == session_id,
                PromotionRun.finished_at.is_(None),
            )
            .limit(1)
        )
        return found is not None

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
