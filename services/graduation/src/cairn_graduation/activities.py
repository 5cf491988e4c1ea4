"""Graduation activities: every piece of I/O the workflows do. Each acts in the memory's own scope."""

import re
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from temporalio import activity
from temporalio.exceptions import ApplicationError

from cairn_contracts import limits, subjects
from cairn_contracts.errors import CairnError, ErrorCode
from cairn_contracts.graduation import (
    GraduatedScope,
    GraduateInput,
    MemorySnapshot,
    StampResult,
    SweepBatchRequest,
    SweepCandidate,
)
from cairn_contracts.identity import Role
from cairn_contracts.knowledge import (
    Article,
    ArticleIdRequest,
    ArticleSource,
    ProposeRequest,
    ProposeResult,
    Visibility,
)
from cairn_graduation.metrics import VERDICTS
from cairn_graduation.store import GraduationStore
from cairn_scope import Scope
from cairn_servicekit import ServiceClient
from cairn_storage import declare_maintenance

SYSTEM_KEY = "system:graduation"  # graduation acts for the memory's own subject, never another
TITLE_CHARS = 120
CATEGORY = "graduated"

# Error types the workflows (and the on-demand trigger) switch on.
GATE_UNAVAILABLE = "GateUnavailable"
MEMORY_NOT_FOUND = "MemoryNotFound"


def subject_scope(tenant_id: str, subject_id: str) -> Scope:
    return Scope(tenant_id=tenant_id, subject_id=subject_id, role=Role.agent, key_id=SYSTEM_KEY)


def article_title(text: str) -> str:
    """The memory's first line, whitespace collapsed, cut at a word boundary."""
    first = next((line for line in text.splitlines() if line.strip()), text)
    title = re.sub(r"\s+", " ", first).strip()
    if len(title) <= TITLE_CHARS:
        return title
    cut = title[: TITLE_CHARS - 1]
    if " " in cut[TITLE_CHARS // 2 :]:
        cut = cut[: cut.rindex(" ")]
    return cut.rstrip() + "…"


def article_scope(article: Article) -> GraduatedScope:
    return "global" if article.project_id is None else "project"


def summary(article: Article) -> Article:
    """The body-less article summary graduation answers with."""
    return article.model_copy(update={"body": None})


class GraduationActivities:
    def __init__(self, sessionmaker: async_sessionmaker[AsyncSession], services: ServiceClient) -> None:
        self._sm = sessionmaker
        self._services = services

    @activity.defn
    async def load(self, inp: GraduateInput) -> MemorySnapshot:
        """The memory, read in its own scope; a missing one fails the workflow (no retry)."""
        async with self._sm() as session:
            found = await GraduationStore(session).memory(
                subject_scope(inp.tenant_id, inp.subject_id), inp.memory_id
            )
        if found is None:
            raise ApplicationError("no such memory", type=MEMORY_NOT_FOUND, non_retryable=True)
        return found

    @activity.defn
    async def existing_article(self, inp: GraduateInput, article_id: str) -> Article | None:
        """The memory's graduated article as its owner sees it (None once it was deleted)."""
        try:
            reply = await self._services.request(
                subjects.KNOWLEDGE_GET,
                subject_scope(inp.tenant_id, inp.subject_id),
                ArticleIdRequest(id=article_id),
            )
        except CairnError as exc:
            if exc.body().code == ErrorCode.not_found:
                return None
            raise _activity_error(exc) from exc
        VERDICTS.labels("already_graduated").inc()
        return summary(Article.model_validate(reply.data))

    @activity.defn
    async def propose(self, inp: GraduateInput, memory: MemorySnapshot) -> ProposeResult:
        """Propose the memory through the novelty gate as an owner-visible article. A gate that falls open
        (embeddings down) fails this non-retryably: nothing is stamped and the memory graduates later."""
        project_id = None if inp.re_scope == "global" else memory.project_id
        request = ProposeRequest(
            title=article_title(memory.text),
            body=memory.text,
            category=CATEGORY,
            tags=memory.tags[: limits.TAGS_MAX],
            project_id=project_id,
            visibility=Visibility.owner,
            source=ArticleSource.graduated,
            source_memory_id=memory.id,
        )
        try:
            reply = await self._services.request(
                subjects.KNOWLEDGE_PROPOSE,
                subject_scope(inp.tenant_id, inp.subject_id),
                request,
                timeout=inp.propose_timeout_seconds,
            )
        except CairnError as exc:
            raise _activity_error(exc) from exc
        result = ProposeResult.model_validate(reply.data)
        VERDICTS.labels(result.verdict.value).inc()
        return result.model_copy(update={"article": summary(result.article)})

    @activity.defn
    async def stamp(
        self, inp: GraduateInput, article_id: str, scope: GraduatedScope, stale: str | None
    ) -> StampResult:
        async with self._sm.begin() as session:
            result = await GraduationStore(session).stamp(
                subject_scope(inp.tenant_id, inp.subject_id), inp.memory_id, article_id, scope, stale
            )
        if result is None:  # forgotten while it graduated
            raise ApplicationError("no such memory", type=MEMORY_NOT_FOUND, non_retryable=True)
        return result

    @activity.defn
    async def tick_start(self) -> datetime:
        """The database's clock: claims are compared with it, never with a worker's clock."""
        async with self._sm() as session:
            return await GraduationStore(session).now()

    @activity.defn
    async def claim_batch(self, req: SweepBatchRequest) -> list[SweepCandidate]:
        async with self._sm.begin() as session:
            await declare_maintenance(session, "graduation_sweep")
            return await GraduationStore(session).claim_candidates(
                req.tick_started_at, req.limit, req.recall_threshold, req.scan_limit
            )


def _activity_error(exc: CairnError) -> Exception:
    """4xx and a fell-open gate are final (retrying cannot help); other 5xx / timeouts are retried."""
    body = exc.body()
    if body.code == ErrorCode.gate_unavailable:
        return ApplicationError(body.message, type=GATE_UNAVAILABLE, non_retryable=True)
    if body.status < 500:
        return ApplicationError(body.message, body.code, type=type(exc).__name__, non_retryable=True)
    return exc
