"""NATS subjects of the graduation service."""

from cairn_contracts import subjects
from cairn_contracts.envelope import Reply
from cairn_contracts.graduation import GraduateRequest
from cairn_graduation.trigger import GraduationTrigger
from cairn_scope import Scope
from cairn_servicekit import NatsService


def register(nats_service: NatsService, trigger: GraduationTrigger) -> None:
    @nats_service.route(subjects.GRADUATION_GRADUATE, GraduateRequest)
    async def graduate(scope: Scope, req: GraduateRequest) -> Reply:
        return Reply(data=(await trigger.graduate(scope, req)).model_dump(mode="json"))
