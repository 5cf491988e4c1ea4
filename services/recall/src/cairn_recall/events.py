"""Publishes `memory.recalled` without ever blocking a recall: bounded, best-effort, in the background.

The memory service bumps a memory at most once per cooldown, so a memory this replica already announced
within the cooldown is not announced again: a hot memory recalled on every call costs one event per
cooldown instead of one per recall (a publish, its acknowledgement, and the consumer's UPDATE).
"""

import asyncio
import logging

from cachetools import TTLCache
from nats.js import JetStreamContext

from cairn_contracts import subjects
from cairn_contracts.recall import MemoryRecalled
from cairn_observability.propagation import inject
from cairn_recall.metrics import HOTNESS_DROPPED
from cairn_scope import Scope

log = logging.getLogger(__name__)


class HotnessPublisher:
    def __init__(
        self, js: JetStreamContext, max_pending: int, cooldown_seconds: float, max_announced: int = 100_000
    ) -> None:
        self._js = js
        self._max_pending = max_pending
        self._pending: set[asyncio.Task[None]] = set()
        self._announced: TTLCache[tuple[str, str, str], bool] = TTLCache(max_announced, cooldown_seconds)
        self.dropped = 0

    async def __call__(self, scope: Scope, memory_ids: list[str]) -> None:
        memory_ids = [m for m in memory_ids if (scope.tenant_id, scope.subject_id, m) not in self._announced]
        if not memory_ids:
            return
        if len(self._pending) >= self._max_pending:
            self.dropped += 1  # the signal is a heuristic; shedding it beats slowing recall
            HOTNESS_DROPPED.inc()
            return
        event = MemoryRecalled(tenant_id=scope.tenant_id, subject_id=scope.subject_id, memory_ids=memory_ids)
        for m in memory_ids:
            self._announced[(scope.tenant_id, scope.subject_id, m)] = True
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
