"""NATS subjects of the recall service."""

from cairn_contracts import subjects
from cairn_contracts.envelope import Reply
from cairn_contracts.recall import RecallRequest
from cairn_recall.service import RecallService
from cairn_scope import Scope
from cairn_servicekit import NatsService


def register(nats_service: NatsService, recall: RecallService) -> None:
    @nats_service.route(subjects.RECALL_MEMORY, RecallRequest)
    async def recall_memory(scope: Scope, req: RecallRequest) -> Reply:
        hits, meta = await recall.recall(scope, req)
        # The ANN fields appear only on reads that scanned the index; every other field always appears.
        body = meta.model_dump(exclude={"ann_iterative_scan", "ann_iterative_scan_reason"})
        body |= meta.model_dump(
            include={"ann_iterative_scan", "ann_iterative_scan_reason"}, exclude_none=True
        )
        return Reply(data=[h.model_dump(mode="json") for h in hits], meta=body)
