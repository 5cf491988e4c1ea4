"""JetStream: the memory events stream and the `memory.created` publisher."""

import dataclasses
import logging

from nats.js import JetStreamContext
from nats.js.api import RetentionPolicy, StorageType, StreamConfig
from nats.js.errors import BadRequestError

from cairn_contracts import subjects
from cairn_contracts.memory import Memory, MemoryCreated
from cairn_observability.propagation import inject
from cairn_scope import Scope

log = logging.getLogger(__name__)

STREAM = StreamConfig(
    name=subjects.EVENTS_STREAM,
    subjects=[subjects.EVENTS_SUBJECTS],
    retention=RetentionPolicy.LIMITS,
    storage=StorageType.FILE,
    max_age=7 * 24 * 3600,
    duplicate_window=120,
)


async def ensure_stream(js: JetStreamContext, replicas: int = 1) -> None:
    """Create the stream, or bring an existing one to this config (idempotent; every replica may call it).

    `replicas` is the JetStream replication factor (3 on a 3-node NATS cluster); it is part of the config
    every start re-applies, so it is a setting (`CAIRN_EVENTS_STREAM_REPLICAS`), not a one-off edit."""
    config = dataclasses.replace(STREAM, num_replicas=replicas)
    try:
        await js.add_stream(config)
    except BadRequestError:
        await js.update_stream(config)


class CreatedPublisher:
    def __init__(self, js: JetStreamContext) -> None:
        self._js = js

    async def __call__(self, memory: Memory, scope: Scope) -> None:
        """Announce a row that waits for its embedding. A lost publish is caught by the worker's sweep."""
        event = MemoryCreated(memory_id=memory.id, tenant_id=scope.tenant_id)
        try:
            # Msg-Id dedupes a retried publish inside the stream's duplicate window.
            await self._js.publish(
                subjects.MEMORY_CREATED,
                event.model_dump_json().encode(),
                headers=inject({"Nats-Msg-Id": f"created-{memory.id}"}),  # + the writer's trace context
            )
        except Exception:
            log.warning(
                "memory.created publish failed for %s; the sweep will embed it", memory.id, exc_info=True
            )
