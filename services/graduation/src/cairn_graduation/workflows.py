"""Graduation workflows. Deterministic code only: every read and write happens in an activity."""

import asyncio
import hashlib
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy, SearchAttributeKey, SearchAttributePair, TypedSearchAttributes
from temporalio.exceptions import ApplicationError, ChildWorkflowError, WorkflowAlreadyStartedError

with workflow.unsafe.imports_passed_through():
    from cairn_contracts.graduation import (
        GraduateInput,
        GraduateOutcome,
        GraduateProgress,
        SweepBatchRequest,
        SweepCandidate,
        SweepParams,
        SweepResult,
        SweepState,
    )
    from cairn_graduation.activities import (
        GATE_UNAVAILABLE,
        MEMORY_NOT_FOUND,
        GraduationActivities,
        article_scope,
    )

TENANT_ATTR = SearchAttributeKey.for_keyword("CairnTenantId")
SUBJECT_ATTR = SearchAttributeKey.for_keyword("CairnSubjectId")
MEMORY_ATTR = SearchAttributeKey.for_keyword("CairnMemoryId")

IO_RETRY = RetryPolicy(
    initial_interval=timedelta(milliseconds=500),
    maximum_interval=timedelta(seconds=10),
    maximum_attempts=10,
    non_retryable_error_types=[GATE_UNAVAILABLE, MEMORY_NOT_FOUND],
)
# The gate call: a lost attempt (worker killed, knowledge service restarting) is retried; a fell-open
# gate is not (the activity marks it non-retryable), so an on-demand caller hears 503 promptly.
PROPOSE_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    maximum_interval=timedelta(seconds=10),
    maximum_attempts=5,
    non_retryable_error_types=[GATE_UNAVAILABLE, MEMORY_NOT_FOUND],
)
IO_TIMEOUT = timedelta(seconds=30)


def graduation_workflow_id(tenant_id: str, subject_id: str, memory_id: str) -> str:
    """One id per (tenant, subject, memory): the on-demand trigger and the sweep never run twins."""
    digest = hashlib.sha256(f"{subject_id}\x00{memory_id}".encode()).hexdigest()[:32]
    return f"graduate-{tenant_id}-{digest}"


def search_attributes(inp: GraduateInput) -> TypedSearchAttributes:
    """Lets operators list one tenant's (or subject's, or memory's) graduations in the UI or CLI."""
    return TypedSearchAttributes(
        [
            SearchAttributePair(TENANT_ATTR, inp.tenant_id),
            SearchAttributePair(SUBJECT_ATTR, inp.subject_id[:200]),
            SearchAttributePair(MEMORY_ATTR, inp.memory_id),
        ]
    )


@workflow.defn
class GraduateMemory:
    """Graduate one memory into an owner-visible knowledge article.

    load (own scope) -> already graduated: its article, no gate -> propose through the novelty gate ->
    stamp graduated_at + the article on any durable verdict (first stamp wins, decided by the database).
    A fell-open gate fails the run with `GateUnavailable` and stamps nothing.
    """

    def __init__(self) -> None:
        self._progress = GraduateProgress()

    @workflow.query
    def progress(self) -> GraduateProgress:
        """The current stage and verdict, for operators (`temporal workflow query --type progress`)."""
        return self._progress

    @workflow.run
    async def run(self, inp: GraduateInput) -> GraduateOutcome:
        try:
            outcome = await self._graduate(inp)
        except Exception:
            self._progress.stage = "failed"
            raise
        self._progress.stage = "done"
        self._progress.verdict = outcome.verdict
        self._progress.article_id = outcome.article.id
        self._progress.scope = outcome.scope
        return outcome

    async def _graduate(self, inp: GraduateInput) -> GraduateOutcome:
        self._progress.stage = "load"
        memory = await workflow.execute_activity_method(
            GraduationActivities.load, inp, start_to_close_timeout=IO_TIMEOUT, retry_policy=IO_RETRY
        )
        if memory.graduated_article_id is not None and memory.graduated_scope is not None:
            self._progress.stage = "existing"
            existing = await workflow.execute_activity_method(
                GraduationActivities.existing_article,
                args=[inp, memory.graduated_article_id],
                start_to_close_timeout=IO_TIMEOUT,
                retry_policy=IO_RETRY,
            )
            if existing is not None:  # short-circuit: the gate is not run again
                return GraduateOutcome(
                    verdict="already_graduated", created=False, article=existing, scope=memory.graduated_scope
                )
            # its article was deleted: graduate again, replacing the stale stamp
        self._progress.stage = "propose"
        proposed = await workflow.execute_activity_method(
            GraduationActivities.propose,
            args=[inp, memory],
            start_to_close_timeout=timedelta(seconds=inp.propose_timeout_seconds),
            retry_policy=PROPOSE_RETRY,
        )
        self._progress.verdict = proposed.verdict.value
        self._progress.article_id = proposed.article.id
        # The article's own partition is the truth: the gate may answer with an article that already
        # exists for this memory (one article per source memory), whatever this run asked for.
        scope = article_scope(proposed.article)
        self._progress.scope = scope
        self._progress.stage = "stamp"
        stamped = await workflow.execute_activity_method(
            GraduationActivities.stamp,
            args=[inp, proposed.article.id, scope, memory.graduated_article_id],
            start_to_close_timeout=IO_TIMEOUT,
            retry_policy=IO_RETRY,
        )
        if stamped.won:
            return GraduateOutcome(
                verdict=proposed.verdict.value,
                created=proposed.created,
                article=proposed.article,
                scope=scope,
                stamped_by_this_run=True,
            )
        # another graduation stamped first: its article and scope stand
        winner = proposed.article
        if stamped.article_id != proposed.article.id:
            found = await workflow.execute_activity_method(
                GraduationActivities.existing_article,
                args=[inp, stamped.article_id],
                start_to_close_timeout=IO_TIMEOUT,
                retry_policy=IO_RETRY,
            )
            if found is None:
                raise ApplicationError("the memory's graduated article vanished", non_retryable=True)
            winner = found
        return GraduateOutcome(
            verdict="already_graduated", created=False, article=winner, scope=stamped.scope
        )


@workflow.defn
class SweepGraduations:
    """Graduate hot memories (recall_count >= threshold, live, not yet graduated), at most `max_per_run`
    per tick, tenants round-robin, as child `GraduateMemory` workflows with the on-demand ids (a memory
    already graduating is skipped, not run twice). Never re-scopes. Works in batches and continues as new
    every `batches_per_run` batches, so its history stays bounded however many candidates there are."""

    def __init__(self) -> None:
        self._state = SweepState()

    @workflow.query
    def progress(self) -> SweepState:
        return self._state

    @workflow.run
    async def run(self, params: SweepParams) -> SweepResult:
        self._state = params.state or SweepState()
        st = self._state
        if st.tick_started_at is None:
            st.tick_started_at = await workflow.execute_activity_method(
                GraduationActivities.tick_start, start_to_close_timeout=IO_TIMEOUT, retry_policy=IO_RETRY
            )
        if st.remaining is None:
            st.remaining = params.max_per_run
        st.runs += 1
        for _ in range(params.batches_per_run):
            if st.remaining <= 0:
                return SweepResult(**st.model_dump())
            batch = await workflow.execute_activity_method(
                GraduationActivities.claim_batch,
                SweepBatchRequest(
                    tick_started_at=st.tick_started_at,
                    limit=min(params.batch_size, st.remaining),
                    recall_threshold=params.recall_threshold,
                    scan_limit=params.scan_limit,
                ),
                start_to_close_timeout=IO_TIMEOUT,
                retry_policy=IO_RETRY,
            )
            if not batch:
                return SweepResult(**st.model_dump())
            st.considered += len(batch)
            st.remaining -= len(batch)
            await asyncio.gather(*(self._graduate(params, c) for c in batch))
        if st.remaining <= 0:
            return SweepResult(**st.model_dump())
        workflow.continue_as_new(params.model_copy(update={"state": st}))

    async def _graduate(self, params: SweepParams, candidate: SweepCandidate) -> None:
        inp = GraduateInput(
            tenant_id=candidate.tenant_id,
            subject_id=candidate.subject_id,
            memory_id=candidate.memory_id,
            propose_timeout_seconds=params.propose_timeout_seconds,
        )
        try:
            outcome = await workflow.execute_child_workflow(
                GraduateMemory.run,
                inp,
                id=graduation_workflow_id(inp.tenant_id, inp.subject_id, inp.memory_id),
                task_queue=params.task_queue,
                search_attributes=search_attributes(inp),
                parent_close_policy=workflow.ParentClosePolicy.ABANDON,
            )
        except WorkflowAlreadyStartedError:
            self._state.already_running += 1
            return
        except ChildWorkflowError:  # e.g. the gate fell open: nothing stamped, the next tick retries
            self._state.failed += 1
            return
        if outcome.stamped_by_this_run:
            self._state.graduated += 1
        else:
            self._state.already_graduated += 1
