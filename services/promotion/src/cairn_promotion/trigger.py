"""The explicit trigger (`cairn.v1.promotion.promote`): watermark check, budget, then one workflow."""

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from temporalio.client import Client
from temporalio.exceptions import WorkflowAlreadyStartedError

from cairn_contracts.errors import BudgetExceeded
from cairn_contracts.promotion import EVAL_SUBJECT_ID, PromoteAccepted, PromoteInput, PromoteRequest
from cairn_promotion.compiler import session_fingerprint
from cairn_promotion.metrics import BUDGET_REJECTIONS
from cairn_promotion.settings import PromotionSettings
from cairn_promotion.store import PromotionStore
from cairn_promotion.workflows import PromoteSession, promotion_workflow_id, search_attributes
from cairn_scope import Scope


class PromotionTrigger:
    def __init__(
        self, sessionmaker: async_sessionmaker[AsyncSession], temporal: Client, settings: PromotionSettings
    ) -> None:
        self._sm = sessionmaker
        self._temporal = temporal
        self._settings = settings

    async def promote(self, scope: Scope, req: PromoteRequest) -> PromoteAccepted:
        """Answer before any compile: unchanged and 0/1-turn sessions cost nothing, an exhausted budget is
        a 429 here, and a session already being promoted joins that run."""
        workflow_id = promotion_workflow_id(scope.tenant_id, scope.subject_id, req.session_id)
        if scope.subject_id == EVAL_SUBJECT_ID:
            return PromoteAccepted(workflow_id=workflow_id, status="noop")
        async with self._sm() as session:
            store = PromotionStore(session)
            turns = await store.turns(scope, req.session_id)
            watermark = await store.watermark(scope, req.session_id)
        if len(turns) < 2:
            return PromoteAccepted(workflow_id=workflow_id, status="noop")
        if session_fingerprint(turns) == watermark:
            return PromoteAccepted(workflow_id=workflow_id, status="unchanged")
        try:
            async with self._sm.begin() as session:
                reserved = await PromotionStore(session).reserve(
                    scope, req.session_id, self._settings.default_budget_per_hour
                )
        except BudgetExceeded:
            BUDGET_REJECTIONS.labels("trigger").inc()
            raise
        if reserved.run_id is None:  # a sweep's run is in flight, or finished it since the look above
            return PromoteAccepted(
                workflow_id=workflow_id, status="running" if reserved.status == "running" else "unchanged"
            )
        reservation = reserved.run_id
        inp = PromoteInput(
            tenant_id=scope.tenant_id,
            subject_id=scope.subject_id,
            session_id=req.session_id,
            reservation_id=reservation,
            confidence_threshold=self._settings.confidence_threshold,
            max_candidates=self._settings.max_candidates,
            compile_timeout_seconds=self._settings.compile_timeout_seconds,
        )
        try:
            await self._temporal.start_workflow(
                PromoteSession.run,
                inp,
                id=workflow_id,
                task_queue=self._settings.task_queue,
                search_attributes=search_attributes(inp),
            )
        except WorkflowAlreadyStartedError:
            async with self._sm.begin() as session:
                await PromotionStore(session).release(reservation)
            return PromoteAccepted(workflow_id=workflow_id, status="running")
        return PromoteAccepted(workflow_id=workflow_id, status="started")
