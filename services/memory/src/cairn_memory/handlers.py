"""NATS subjects of the memory service."""

from cairn_contracts import subjects
from cairn_contracts.envelope import ListMeta, Reply
from cairn_contracts.memory import (
    ListMemoriesRequest,
    MemoryIdRequest,
    RememberMessage,
    SessionHistoryRequest,
    SessionTurnWrite,
    SupersedeRequest,
)
from cairn_contracts.promotion import PersistPromotedRequest
from cairn_memory.promoted import PromotedWriter
from cairn_memory.service import MemoryService
from cairn_scope import Scope
from cairn_servicekit import NatsService
from cairn_servicekit.runtime import write_id


def register(nats_service: NatsService, memory: MemoryService, promoted: PromotedWriter) -> None:
    @nats_service.route(subjects.MEMORY_PERSIST_PROMOTED, PersistPromotedRequest)
    async def persist_promoted(scope: Scope, req: PersistPromotedRequest) -> Reply:
        return Reply(data=(await promoted.persist(scope, req)).model_dump(mode="json"))

    @nats_service.route(subjects.MEMORY_REMEMBER, RememberMessage)
    async def remember(scope: Scope, req: RememberMessage) -> Reply:
        body = req.root
        if isinstance(body, SessionTurnWrite):
            turn = await memory.append_turn(scope, body, write_id())
            return Reply(data=turn.model_dump(mode="json"))
        return Reply(data=(await memory.remember(scope, body, write_id=write_id())).model_dump(mode="json"))

    @nats_service.route(subjects.MEMORY_LIST, ListMemoriesRequest)
    async def list_memories(scope: Scope, req: ListMemoriesRequest) -> Reply:
        rows, total = await memory.list_memories(scope, req)
        meta = ListMeta(total_count=total, limit=req.limit, offset=req.offset)
        return Reply(data=[m.model_dump(mode="json") for m in rows], meta=meta.model_dump())

    @nats_service.route(subjects.MEMORY_GET, MemoryIdRequest)
    async def get(scope: Scope, req: MemoryIdRequest) -> Reply:
        return Reply(data=(await memory.get(scope, req.id)).model_dump(mode="json"))

    @nats_service.route(subjects.MEMORY_FORGET, MemoryIdRequest)
    async def forget(scope: Scope, req: MemoryIdRequest) -> Reply:
        return Reply(data=(await memory.forget(scope, req.id)).model_dump(mode="json"))

    @nats_service.route(subjects.MEMORY_SUPERSEDE, SupersedeRequest)
    async def supersede(scope: Scope, req: SupersedeRequest) -> Reply:
        return Reply(data=(await memory.supersede(scope, req.id, req.memory)).model_dump(mode="json"))

    @nats_service.route(subjects.SESSION_HISTORY, SessionHistoryRequest)
    async def history(scope: Scope, req: SessionHistoryRequest) -> Reply:
        rows, total = await memory.history(scope, req.session_id, req.limit, req.offset)
        meta = ListMeta(total_count=total, limit=req.limit, offset=req.offset)
        return Reply(data=[t.model_dump(mode="json") for t in rows], meta=meta.model_dump())
