"""Publishes `memory.recalled` without ever blocking a recall: bounded, best-effort, in the background."""

import asyncio
import logging

from nats.js import JetStreamContext

from cairn_contracts import subjects
from cairn_contracts.recall import MemoryRecalled
from cairn_observability.propagation import inject
from cairn_recall.metrics import HOTNESS_DROPPED
from cairn_scope import Scope

log = logging.getLogger(__name__)


class HotnessPublisher:
    def __init__(self, js: JetStreamContext, max_pending: int) -> None:
        self._js = js
        self._max_pending = max_pending
        self._pending: set[asyncio.Task[None]] = set()
        self.dropped = 0

    async def __call__(self, scope: Scope, memory_ids: list[str]) -> None:
        if len(self._pending) >= self._max_pending:
            self.dropped += 1  # the signal is a heuristic; shedding it beats slowing recall
            HOTNESS_DROPPED.inc()
            return
        event = MemoryRecalled(tenant_id=scope.tenant_id, subject_id=scope.subject_id, memory_ids=memory_ids)
        task = asyncio.create_task(self._publish(event, inject({})))
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def _publish(self, event: MemoryRecalled, headers: dict[str, str]) -> None:
        try:
            await self._js.publish(
                subjects.MEMORY_RECALLED, event.model_dump_json().encode(), headers=headers or None
            )
        except Exception:
            log.warning("memory.recalled publish failed", exc_info=True)

    async def drain(self) -> None:
        if self._pending:
            await asyncio.wait(self._pending, timeout=5)
