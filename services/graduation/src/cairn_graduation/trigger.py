"""The on-demand trigger (`cairn.v1.graduation.graduate`): own-scope check, then the one workflow per
memory, whose result decides the status."""

import asyncio

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from temporalio.client import Client, WorkflowFailureError
from temporalio.exceptions import ApplicationError, WorkflowAlreadyStartedError

from cairn_contracts.errors import AlreadyGraduated, GateUnavailable, NotFound, ServiceUnavailable
from cairn_contracts.graduation import GraduatedScope, GraduateInput, GraduateRequest, GraduateResult
from cairn_graduation.activities import GATE_UNAVAILABLE, MEMORY_NOT_FOUND
from cairn_graduation.settings import GraduationSettings
from cairn_graduation.store import GraduationStore
from cairn_graduation.workflows import GraduateMemory, graduation_workflow_id, search_attributes
from cairn_scope import Scope


def failure_type(exc: BaseException) -> str | None:
    """The ApplicationError type at the root of a workflow failure (through activity / child errors)."""
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, ApplicationError) and cause.type:
            return cause.type
        cause = cause.__cause__
    return None


class GraduationTrigger:
    def __init__(
        self, sessionmaker: async_sessionmaker[AsyncSession], temporal: Client, settings: GraduationSettings
    ) -> None:
        self._sm = sessionmaker
        self._temporal = temporal
        self._settings = settings

    async def graduate(self, scope: Scope, req: GraduateRequest) -> GraduateResult:
        """Graduate the caller's own memory. The stamped scope decides a conflict: a memory that graduated
        (or is graduating) into another scope than this call asks for is 409 `already_graduated`."""
        async with self._sm() as session:
            memory = await GraduationStore(session).memory(scope, req.memory_id)
        if memory is None:
            raise NotFound("no such memory")
        target: GraduatedScope = (
            "global" if req.re_scope == "global" or memory.project_id is None else "project"
        )
        if memory.graduated_scope is not None and memory.graduated_scope != target:
            raise _conflict(memory.graduated_scope)
        inp = GraduateInput(
            tenant_id=scope.tenant_id,
            subject_id=scope.subject_id,
            memory_id=memory.id,
            re_scope=req.re_scope,
            propose_timeout_seconds=self._settings.graduation_propose_timeout_seconds,
        )
        workflow_id = graduation_workflow_id(inp.tenant_id, inp.subject_id, inp.memory_id)
        joined = False
        try:
            handle = await self._temporal.start_workflow(
                GraduateMemory.run,
                inp,
                id=workflow_id,
                task_queue=self._settings.task_queue,
                search_attributes=search_attributes(inp),
            )
        except WorkflowAlreadyStartedError:  # the sweep or another call is graduating it: join that run
            joined = True
            handle = self._temporal.get_workflow_handle_for(GraduateMemory.run, workflow_id)
        try:
            outcome = await asyncio.wait_for(handle.result(), self._settings.graduation_wait_seconds)
        except TimeoutError:
            raise ServiceUnavailable("the graduation is still running; retry shortly") from None
        except WorkflowFailureError as exc:
            kind = failure_type(exc)
            if kind == GATE_UNAVAILABLE:
                raise GateUnavailable() from None
            if kind == MEMORY_NOT_FOUND:
                raise NotFound("no such memory") from None
            raise ServiceUnavailable("the graduation failed; retry shortly") from None
        if outcome.scope != target:
            raise _conflict(outcome.scope)
        if joined or not outcome.stamped_by_this_run:
            return GraduateResult(verdict="already_graduated", created=False, article=outcome.article)
        return GraduateResult(verdict=outcome.verdict, created=outcome.created, article=outcome.article)


def _conflict(graduated: GraduatedScope) -> AlreadyGraduated:
    where = "project-scoped" if graduated == "project" else "tenant-wide"
    return AlreadyGraduated(f"this memory already graduated into a {where} article")
