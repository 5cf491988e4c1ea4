"""NATS subjects of the knowledge service."""

from cairn_contracts import subjects
from cairn_contracts.envelope import ListMeta, Reply
from cairn_contracts.knowledge import (
    ArticleIdRequest,
    KnowledgeSearchMessage,
    ListArticlesRequest,
    ProposeRequest,
    VisibleIdsRequest,
    VisibleIdsResult,
)
from cairn_knowledge.gate import NoveltyGate
from cairn_knowledge.service import KnowledgeService
from cairn_scope import Scope
from cairn_servicekit import NatsService


def register(nats_service: NatsService, gate: NoveltyGate, knowledge: KnowledgeService) -> None:
    @nats_service.route(subjects.KNOWLEDGE_PROPOSE, ProposeRequest)
    async def propose(scope: Scope, req: ProposeRequest) -> Reply:
        return Reply(data=(await gate.propose(scope, req)).model_dump(mode="json"))

    @nats_service.route(subjects.KNOWLEDGE_GET, ArticleIdRequest)
    async def get(scope: Scope, req: ArticleIdRequest) -> Reply:
        return Reply(data=(await knowledge.get(scope, req.id)).model_dump(mode="json"))

    @nats_service.route(subjects.KNOWLEDGE_LIST, ListArticlesRequest)
    async def list_articles(scope: Scope, req: ListArticlesRequest) -> Reply:
        rows, total = await knowledge.list_articles(scope, req)
        meta = ListMeta(total_count=total, limit=req.limit, offset=req.offset)
        return Reply(data=[a.model_dump(mode="json") for a in rows], meta=meta.model_dump())

    @nats_service.route(subjects.KNOWLEDGE_DELETE, ArticleIdRequest)
    async def delete(scope: Scope, req: ArticleIdRequest) -> Reply:
        return Reply(data=(await knowledge.delete(scope, req.id)).model_dump(mode="json"))

    @nats_service.route(subjects.KNOWLEDGE_VISIBLE_IDS, VisibleIdsRequest)
    async def visible_ids(scope: Scope, req: VisibleIdsRequest) -> Reply:
        ids = await knowledge.visible_ids(scope, req.ids)
        return Reply(data=VisibleIdsResult(ids=ids).model_dump(mode="json"))

    @nats_service.route(subjects.KNOWLEDGE_SEARCH, KnowledgeSearchMessage)
    async def search(scope: Scope, req: KnowledgeSearchMessage) -> Reply:
        hits, meta = await knowledge.search(scope, req)
        # The ANN fields appear only on reads that scanned the index; every other field always appears.
        body = meta.model_dump(exclude={"ann_iterative_scan", "ann_iterative_scan_reason"})
        body |= meta.model_dump(
            include={"ann_iterative_scan", "ann_iterative_scan_reason"}, exclude_none=True
        )
        return Reply(data=[h.model_dump(mode="json") for h in hits], meta=body)
