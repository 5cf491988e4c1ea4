"""Consumes `memory.recalled` and counts each memory's recalls in `memory_recalls`, at most once per cooldown.

Like the embedding worker, the loop outlives database and NATS outages (backoff, bounded redelivery,
dead letters); a lost bump only makes a memory look a little less hot.
"""

import asyncio
import contextlib
import logging
import uuid

from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from opentelemetry.trace import SpanKind
from pydantic import ValidationError
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from cairn_contracts import subjects
from cairn_contracts.dead_letter import DeadLetterReason
from cairn_contracts.recall import MemoryRecalled
from cairn_observability.metrics import declare_consumer
from cairn_observability.propagation import extract
from cairn_observability.tracing import set_scope_attributes, tracer
from cairn_servicekit.backoff import Backoff
from cairn_servicekit.consumer import DeadLetters, Redelivery, durable_pull, fetch_batch

log = logging.getLogger(__name__)

DURABLE = subjects.RECALL_BUMPS_DURABLE


# The event's memories, fenced as in recall's rows read (an id lookup the subject's scope index is never ANDed
# into), counted in `memory_recalls` (migration 0020): the memory's own row is only read. Ids that are not the
# subject's are dropped by the subject check; the ORDER BY takes row locks in one order across replicas.
_BUMP = text(
    """
INSERT INTO memory_recalls AS r (memory_id, tenant_id, subject_id, recall_count, last_recalled_at, settled)
SELECT m.id, m.tenant_id, m.subject_id, 1, now(), m.superseded_by IS NOT NULL OR m.graduated_at IS NOT NULL
FROM (SELECT id, tenant_id, subject_id, superseded_by, graduated_at FROM memories
      WHERE id = ANY(CAST(:ids AS uuid[])) OFFSET 0) m
WHERE m.tenant_id = :tenant_id AND m.subject_id = :subject_id
ORDER BY m.id
ON CONFLICT (memory_id) DO UPDATE SET recall_count = r.recall_count + 1, last_recalled_at = now()
WHERE r.last_recalled_at < now() - make_interval(secs => :cooldown_seconds)
"""
)


async def bump(
    sessionmaker: async_sessionmaker[AsyncSession], event: MemoryRecalled, cooldown_seconds: int
) -> int:
    """Bump the event's memories inside its own (tenant, subject); a memory bumped within the cooldown is skipped."""
    params = {
        "tenant_id": event.tenant_id,
        "subject_id": event.subject_id,
        "ids": [str(uuid.UUID(m)) for m in event.memory_ids],
        "cooldown_seconds": cooldown_seconds,
    }
    async with sessionmaker.begin() as session:
        result = await session.execute(_BUMP, params)
    return int(result.rowcount or 0)  # type: ignore[attr-defined]


async def consume(
    nc: NATS,
    sessionmaker: async_sessionmaker[AsyncSession],
    cooldown_seconds: int,
    redelivery: Redelivery,
) -> None:
    js = nc.jetstream()
    declare_consumer(DURABLE)
    sub = await durable_pull(
        js, subjects.MEMORY_RECALLED, DURABLE, subjects.EVENTS_STREAM, ack_wait=30, redelivery=redelivery
    )
    dead = DeadLetters(js, DURABLE, redelivery)
    backoff = Backoff(initial=0.5, cap=15.0)
    try:
        while True:
            try:
                msgs = await fetch_batch(sub, 50, 1.0)
                await _handle(msgs, sessionmaker, cooldown_seconds, dead)
                backoff.reset()
            except Exception as exc:  # NATS gone mid-ack: wait and go on, never end the loop
                delay = backoff.next()
                log.warning("recall bumps: %s: %s; retrying in %.1f s", type(exc).__name__, exc, delay)
                await asyncio.sleep(delay)
    finally:
        # An open pull subscription would hold nc.drain() for its whole drain timeout.
        with contextlib.suppress(Exception):
            await sub.unsubscribe()


async def _handle(
    msgs: list[Msg], sessionmaker: async_sessionmaker[AsyncSession], cooldown_seconds: int, dead: DeadLetters
) -> None:
    for msg in msgs:
        try:
            event = MemoryRecalled.model_validate_json(msg.data)
        except ValidationError as exc:
            await dead.give_up(msg, DeadLetterReason.malformed, str(exc))
            continue
        try:
            with tracer().start_as_current_span(
                f"process {subjects.MEMORY_RECALLED}", context=extract(msg.headers), kind=SpanKind.CONSUMER
            ) as span:
                set_scope_attributes(span, event.tenant_id, event.subject_id)
                await bump(sessionmaker, event, cooldown_seconds)
        except Exception as exc:
            log.warning("recall bump failed (%s: %s); will be redelivered", type(exc).__name__, exc)
            await dead.failed(msg, f"{type(exc).__name__}: {exc}")
            continue
        await msg.ack()
