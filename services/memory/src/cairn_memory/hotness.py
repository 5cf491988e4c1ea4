"""Consumes `memory.recalled` and bumps recall_count / last_recalled_at, at most once per cooldown.

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
from sqlalchemy import func, or_
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from cairn_contracts import subjects
from cairn_contracts.dead_letter import DeadLetterReason
from cairn_contracts.identity import Role
from cairn_contracts.recall import MemoryRecalled
from cairn_observability.metrics import declare_consumer
from cairn_observability.propagation import extract
from cairn_observability.tracing import set_scope_attributes, tracer
from cairn_scope import Scope, scoped_update
from cairn_servicekit.backoff import Backoff
from cairn_servicekit.consumer import DeadLetters, Redelivery, durable_pull, fetch_batch
from cairn_storage.models import Memory

log = logging.getLogger(__name__)

DURABLE = subjects.RECALL_BUMPS_DURABLE
SYSTEM_KEY = "system:recall-bump"  # the event names the scope; no caller key exists here


async def bump(
    sessionmaker: async_sessionmaker[AsyncSession], event: MemoryRecalled, cooldown_seconds: int
) -> int:
    """Bump the event's memories inside its own (tenant, subject); a memory bumped within the cooldown is skipped."""
    scope = Scope(tenant_id=event.tenant_id, subject_id=event.subject_id, role=Role.agent, key_id=SYSTEM_KEY)
    ids = [uuid.UUID(m) for m in event.memory_ids]
    cutoff = func.now() - func.make_interval(0, 0, 0, 0, 0, 0, cooldown_seconds)
    stmt = (
        scoped_update(Memory, scope)
        .where(Memory.id.in_(ids), or_(Memory.last_recalled_at.is_(None), Memory.last_recalled_at < cutoff))
        .values(recall_count=Memory.recall_count + 1, last_recalled_at=func.now())
    )
    async with sessionmaker.begin() as session:
        result = await session.execute(stmt)
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
