"""NATS subjects of the recall service."""

from cairn_contracts import subjects
from cairn_contracts.envelope import Reply
from cairn_contracts.recall import RecallRequest
from cairn_contracts.recall_context import MetricsRequest, RecallContextMessage, ReferencedMessage
from cairn_recall.merged import MergedRecall
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


def register_merged(nats_service: NatsService, merged: MergedRecall) -> None:
    """Merged recall and its funnel (`cairn.v1.recall.context|referenced|metrics`)."""

    @nats_service.route(subjects.RECALL_CONTEXT, RecallContextMessage)
    async def recall_context(scope: Scope, req: RecallContextMessage) -> Reply:
        return Reply(data=(await merged.recall_context(scope, req)).model_dump(mode="json"))

    @nats_service.route(subjects.RECALL_REFERENCED, ReferencedMessage)
    async def referenced(scope: Scope, req: ReferencedMessage) -> Reply:
        return Reply(data=(await merged.referenced(scope, req)).model_dump(mode="json"))

    @nats_service.route(subjects.RECALL_METRICS, MetricsRequest)
    async def metrics(scope: Scope, req: MetricsRequest) -> Reply:
        return Reply(data=(await merged.metrics(scope)).model_dump(mode="json"))
