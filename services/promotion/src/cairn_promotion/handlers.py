"""NATS subjects of the promotion service."""

from cairn_contracts import subjects
from cairn_contracts.envelope import Reply
from cairn_contracts.promotion import PromoteRequest
from cairn_promotion.trigger import PromotionTrigger
from cairn_scope import Scope
from cairn_servicekit import NatsService


def register(nats_service: NatsService, trigger: PromotionTrigger) -> None:
    @nats_service.route(subjects.PROMOTION_PROMOTE, PromoteRequest)
    async def promote(scope: Scope, req: PromoteRequest) -> Reply:
        return Reply(data=(await trigger.promote(scope, req)).model_dump(mode="json"))
