"""Promotion workflows. Deterministic code only: every read and write happens in an activity."""

import hashlib
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy, SearchAttributeKey, SearchAttributePair, TypedSearchAttributes
from temporalio.exceptions import WorkflowAlreadyStartedError

with workflow.unsafe.imports_passed_through():
    from cairn_contracts.promotion import (
        Candidate,
        PersistPromotedResult,
        PromoteInput,
        PromoteProgress,
        PromoteResult,
        SweepParams,
        SweepResult,
    )
    from cairn_promotion.activities import PromotionActivities
    from cairn_promotion.compiler import apply_gate

TENANT_ATTR = SearchAttributeKey.for_keyword("CairnTenantId")
SUBJECT_ATTR = SearchAttributeKey.for_keyword("CairnSubjectId")
SESSION_ATTR = SearchAttributeKey.for_keyword("CairnSessionId")

IO_RETRY = RetryPolicy(
    initial_interval=timedelta(milliseconds=500), maximum_interval=timedelta(seconds=10), maximum_attempts=10
)
COMPILE_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1), maximum_interval=timedelta(seconds=30), maximum_attempts=5
)
IO_TIMEOUT = timedelta(seconds=60)


def promotion_workflow_id(tenant_id: str, subject_id: str, session_id: str) -> str:
    """One id per (tenant, subject, session): an explicit trigger and the sweep can never run twins."""
    digest = hashlib.sha256(f"{subject_id}\x00{session_id}".encode()).hexdigest()[:32]
    return f"promote-{tenant_id}-{digest}"


def search_attributes(inp: PromoteInput) -> TypedSearchAttributes:
    """Lets operators list one tenant's (or subject's, or session's) promotions in the UI or CLI."""
    return TypedSearchAttributes(
        [
            SearchAttributePair(TENANT_ATTR, inp.tenant_id),
            SearchAttributePair(SUBJECT_ATTR, inp.subject_id[:200]),
            SearchAttributePair(SESSION_ATTR, inp.session_id[:200]),
        ]
    )


def checked_cross_links(survivors: list[Candidate]) -> list[Candidate]:
    """The survivors, whose cross links are checked before anything is written: the persist activity keeps
    only articles the compiling subject can see (`keep_visible`, asked of the knowledge service)."""
    return survivors


@workflow.defn
class PromoteSession:
    """Compile one session's turns into long-term `promoted` memories.

    fingerprint vs watermark -> compile -> confidence gate -> persist (dedupe / supersede / quota) ->
    advance the watermark. A compile failure leaves the watermark where it was, so a retry re-attempts.
    """

    def __init__(self) -> None:
        self._progress = PromoteProgress()

    @workflow.query
    def progress(self) -> PromoteProgress:
        """The current stage and counts, for operators (`temporal workflow query --type progress`)."""
        return self._progress

    @workflow.run
    async def run(self, inp: PromoteInput) -> PromoteResult:
        try:
            result = await self._promote(inp)
        except Exception:
            await self._finish(inp, "failed")
            raise
        await self._finish(inp, result.status)
        return result

    async def _finish(self, inp: PromoteInput, status: str) -> None:
        self._progress.stage = status
        await workflow.execute_activity_method(
            PromotionActivities.finish_run,
            args=[inp.reservation_id, status],
            start_to_close_timeout=IO_TIMEOUT,
            retry_policy=IO_RETRY,
        )

    async def _promote(self, inp: PromoteInput) -> PromoteResult:
        self._progress.stage = "snapshot"
        snap = await workflow.execute_activity_method(
            PromotionActivities.snapshot, inp, start_to_close_timeout=IO_TIMEOUT, retry_policy=IO_RETRY
        )
        self._progress.turns = snap.turn_count
        if snap.turn_count < 2:  # nothing to learn from; no watermark, so junk sessions cost no budget later
            return PromoteResult(**self._progress.model_dump(exclude={"stage"}), status="noop", stage="noop")
        if snap.unchanged:
            return PromoteResult(
                **self._progress.model_dump(exclude={"stage"}),
                status="unchanged",
                stage="unchanged",
                fingerprint=snap.fingerprint,
            )
        self._progress.stage = "compile"
        compiled = await workflow.execute_activity_method(
            PromotionActivities.compile,
            inp,
            start_to_close_timeout=timedelta(seconds=inp.compile_timeout_seconds),
            retry_policy=COMPILE_RETRY,
        )
        self._progress.candidates = len(compiled.candidates)
        survivors = checked_cross_links(
            apply_gate(compiled.candidates, inp.confidence_threshold, inp.max_candidates)
        )
        self._progress.survivors = len(survivors)
        persisted = PersistPromotedResult()
        if survivors:
            self._progress.stage = "persist"
            persisted = await workflow.execute_activity_method(
                PromotionActivities.persist,
                args=[inp, survivors],
                start_to_close_timeout=IO_TIMEOUT,
                retry_policy=IO_RETRY,
            )
        self._progress.promoted = persisted.promoted
        self._progress.superseded = persisted.superseded
        self._progress.deduped = persisted.deduped
        self._progress.dropped_quota = persisted.dropped_quota
        result = PromoteResult(
            **self._progress.model_dump(exclude={"stage"}),
            status="promoted",
            stage="watermark",
            fingerprint=compiled.fingerprint,
        )
        self._progress.stage = "watermark"
        await workflow.execute_activity_method(
            PromotionActivities.advance_watermark,
            args=[inp, result],
            start_to_close_timeout=IO_TIMEOUT,
            retry_policy=IO_RETRY,
        )
        return result


@workflow.defn
class SweepSessions:
    """Promote active sessions, the one nearest its expiry first, as child workflows with the same ids the
    explicit trigger uses (a session already being promoted is skipped, not run twice)."""

    @workflow.run
    async def run(self, params: SweepParams) -> SweepResult:
        result = SweepResult()
        candidates = await workflow.execute_activity_method(
            PromotionActivities.sweep_candidates, start_to_close_timeout=IO_TIMEOUT, retry_policy=IO_RETRY
        )
        result.considered = len(candidates)
        for candidate in candidates:
            reservation = await workflow.execute_activity_method(
                PromotionActivities.reserve,
                candidate,
                start_to_close_timeout=IO_TIMEOUT,
                retry_policy=IO_RETRY,
            )
            if reservation is None:
                result.over_budget += 1
                continue
            if reservation.run_id is None:  # in flight, or promoted since `sweep_candidates` looked
                result.already_running += 1
                continue
            inp = PromoteInput(
                **candidate.model_dump(),
                reservation_id=reservation.run_id,
                confidence_threshold=params.confidence_threshold,
                max_candidates=params.max_candidates,
                compile_timeout_seconds=params.compile_timeout_seconds,
            )
            try:
                await workflow.start_child_workflow(
                    PromoteSession.run,
                    inp,
                    id=promotion_workflow_id(inp.tenant_id, inp.subject_id, inp.session_id),
                    task_queue=params.task_queue,
                    search_attributes=search_attributes(inp),
                    parent_close_policy=workflow.ParentClosePolicy.ABANDON,
                )
                result.started += 1
            except WorkflowAlreadyStartedError:
                result.already_running += 1
                await workflow.execute_activity_method(
                    PromotionActivities.release_run,
                    reservation.run_id,
                    start_to_close_timeout=IO_TIMEOUT,
                    retry_policy=IO_RETRY,
                )
        return result
