"""Promotion activities: every piece of I/O the workflows do."""

import time

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from temporalio import activity
from temporalio.exceptions import ApplicationError

from cairn_contracts import subjects
from cairn_contracts.errors import BudgetExceeded, CairnError
from cairn_contracts.identity import Role
from cairn_contracts.knowledge import VisibleIdsRequest, VisibleIdsResult
from cairn_contracts.limits import PROMOTION_CANDIDATES_MAX
from cairn_contracts.promotion import (
    EVAL_SUBJECT_ID,
    Candidate,
    CompiledSession,
    PersistPromotedRequest,
    PersistPromotedResult,
    PromoteInput,
    PromoteResult,
    SessionSnapshot,
    SweepCandidate,
)
from cairn_promotion.compiler import session_fingerprint
from cairn_promotion.compilers import TenantCompilers
from cairn_promotion.metrics import BUDGET_REJECTIONS, COMPILE_SECONDS, RUNS
from cairn_promotion.settings import PromotionSettings
from cairn_promotion.store import PromotionStore, Reservation
from cairn_scope import Scope
from cairn_servicekit import ServiceClient
from cairn_storage import declare_maintenance
from cairn_storage.usage import UsageMeter

SYSTEM_KEY = "system:promotion"  # promotion acts for the session's own subject, never another


def keep_visible(candidates: list[Candidate], visible: set[str]) -> list[Candidate]:
    """Strip every cross link that is not an article the compiling subject can see: a compromised model
    that "obeys" an injected link instruction still cannot link a foreign or fabricated article."""
    return [
        c.model_copy(update={"cross_links": [link for link in c.cross_links if link in visible]})
        for c in candidates
    ]


def subject_scope(tenant_id: str, subject_id: str) -> Scope:
    return Scope(tenant_id=tenant_id, subject_id=subject_id, role=Role.agent, key_id=SYSTEM_KEY)


class PromotionActivities:
    def __init__(
        self,
        sessionmaker: async_sessionmaker[AsyncSession],
        compilers: TenantCompilers,
        services: ServiceClient,
        settings: PromotionSettings,
        meter: UsageMeter,
    ) -> None:
        self._sm = sessionmaker
        self._compilers = compilers
        self._services = services
        self._settings = settings
        self._meter = meter

    @activity.defn
    async def snapshot(self, inp: PromoteInput) -> SessionSnapshot:
        """Fingerprint the session's turns (scope-enforced) and compare it to the watermark.

        Only the count and the fingerprint travel back: the turns themselves can be megabytes, far past
        Temporal's payload limit, so the compile activity reads them again itself.
        """
        scope = subject_scope(inp.tenant_id, inp.subject_id)
        async with self._sm() as session:
            store = PromotionStore(session)
            turns = await store.turns(scope, inp.session_id)
            watermark = await store.watermark(scope, inp.session_id)
        fingerprint = session_fingerprint(turns)
        return SessionSnapshot(
            turn_count=len(turns), fingerprint=fingerprint, unchanged=watermark == fingerprint
        )

    @activity.defn
    async def compile(self, inp: PromoteInput) -> CompiledSession:
        """Read the session's turns and compile them. Session content is data, never instructions.

        The fingerprint returned is that of the turns actually compiled (a turn appended since the
        snapshot is compiled now and watermarked with it), so the watermark never claims unseen turns.
        """
        async with self._sm() as session:
            turns = await PromotionStore(session).turns(
                subject_scope(inp.tenant_id, inp.subject_id), inp.session_id
            )
        compiler = await self._compilers.for_tenant(inp.tenant_id)
        self._meter.add(inp.tenant_id, "compile_calls")
        start, outcome = time.perf_counter(), "error"
        try:
            candidates = await compiler.compile(turns)
            outcome = "ok"
        finally:
            COMPILE_SECONDS.labels(outcome).observe(time.perf_counter() - start)
        # A long session can yield more candidates than a workflow message may carry; only the most
        # confident ever pass the gate (capped far lower), so the rest are dropped here, not failed on.
        strongest = sorted(candidates, key=lambda c: -c.confidence)[:PROMOTION_CANDIDATES_MAX]
        return CompiledSession(candidates=strongest, fingerprint=session_fingerprint(turns))

    @activity.defn
    async def persist(self, inp: PromoteInput, candidates: list[Candidate]) -> PersistPromotedResult:
        """Hand survivors to the memory service, which owns every write (hash dedupe, supersede, quota)."""
        if inp.subject_id == EVAL_SUBJECT_ID:
            raise ApplicationError("the eval subject is never promoted", non_retryable=True)
        scope = subject_scope(inp.tenant_id, inp.subject_id)
        candidates = keep_visible(candidates, await self._visible_articles(scope, candidates))
        request = PersistPromotedRequest(session_id=inp.session_id, candidates=candidates)
        try:
            reply = await self._services.request(
                subjects.MEMORY_PERSIST_PROMOTED,
                scope,
                request,
                timeout=60,
            )
        except CairnError as exc:
            if exc.status < 500:
                raise ApplicationError(exc.message, type=type(exc).__name__, non_retryable=True) from exc
            raise
        return PersistPromotedResult.model_validate(reply.data)

    async def _visible_articles(self, scope: Scope, candidates: list[Candidate]) -> set[str]:
        """The cross-linked article ids the compiling subject can see (the knowledge service decides).
        Fails closed: if the knowledge service cannot answer, no link survives."""
        links = sorted({link for c in candidates for link in c.cross_links})
        if not links:
            return set()
        try:
            reply = await self._services.request(
                subjects.KNOWLEDGE_VISIBLE_IDS, scope, VisibleIdsRequest(ids=links), timeout=10
            )
            return set(VisibleIdsResult.model_validate(reply.data).ids)
        except CairnError:
            activity.logger.warning("cross_links stripped: the knowledge service did not answer")
            return set()

    @activity.defn
    async def advance_watermark(self, inp: PromoteInput, result: PromoteResult) -> None:
        assert result.fingerprint is not None
        async with self._sm.begin() as session:
            await PromotionStore(session).advance_watermark(
                subject_scope(inp.tenant_id, inp.subject_id),
                inp.session_id,
                result.fingerprint,
                result.promoted,
                result.dropped_quota,
            )

    @activity.defn
    async def finish_run(self, reservation_id: str, status: str) -> None:
        async with self._sm.begin() as session:
            await PromotionStore(session).finish(reservation_id, status)
        RUNS.labels(status).inc()

    @activity.defn
    async def release_run(self, reservation_id: str) -> None:
        async with self._sm.begin() as session:
            await PromotionStore(session).release(reservation_id)

    @activity.defn
    async def sweep_candidates(self) -> list[SweepCandidate]:
        async with self._sm() as session:
            await declare_maintenance(session, "promotion_sweep")
            found = await PromotionStore(session).sweep_candidates(
                self._settings.sweep_window_seconds, self._settings.sweep_max_sessions
            )
        changed = []
        for candidate in found:
            snap = await self.snapshot(PromoteInput(**candidate.model_dump(), reservation_id=""))
            if not snap.unchanged:
                changed.append(candidate)
        return changed

    @activity.defn
    async def reserve(self, candidate: SweepCandidate) -> Reservation | None:
        """The sweep's reservation (or why the session needs none), None when the budget is spent."""
        try:
            async with self._sm.begin() as session:
                return await PromotionStore(session).reserve(
                    subject_scope(candidate.tenant_id, candidate.subject_id),
                    candidate.session_id,
                    self._settings.default_budget_per_hour,
                )
        except BudgetExceeded:
            BUDGET_REJECTIONS.labels("sweep").inc()
            return None
        except CairnError:
            return None
