"""The embedding worker: a JetStream pull consumer that writes vectors, acking only after the commit.

A crash before the commit loses nothing (the messages are redelivered); a crash after the commit but
before the ack re-embeds nothing (rows whose content hash already matches are skipped). A periodic
sweep embeds rows whose `memory.created` publish was lost, or whose message was dead-lettered.
A database or NATS outage never ends the loop: failed messages are nak'ed with backoff (bounded by
max_deliver, then dead-lettered) and the loop itself backs off while the broker is away.
"""

import asyncio
import contextlib
import logging
import os
import signal
import time
import uuid
from collections import defaultdict

from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.js.client import JetStreamContext
from opentelemetry.trace import SpanKind
from pydantic import ValidationError
from sqlalchemy import select, text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from cairn_contracts import subjects
from cairn_contracts.dead_letter import DeadLetterReason
from cairn_contracts.memory import MemoryCreated
from cairn_embeddings import EmbeddingError, EmbeddingSettings, build_embedder, content_hash
from cairn_embeddings.transport import close_shared_transport
from cairn_memory.burst import BurstGate
from cairn_memory.chunks import embed_with_chunks, replace_chunks
from cairn_memory.events import ensure_stream
from cairn_memory.metrics import (
    EMBED_BACKLOG,
    EMBED_BATCH,
    EMBED_BURST_WAIT,
    EMBED_DEFERRED,
    EMBED_LAG,
    EMBEDDED_ROWS,
)
from cairn_memory.settings import MemorySettings
from cairn_observability import TelemetrySettings, setup_telemetry, shutdown_tracing
from cairn_observability.metrics import declare_consumer
from cairn_observability.propagation import link_from
from cairn_observability.tracing import set_scope_attributes, tracer
from cairn_providers import TenantEmbedders, secret_box
from cairn_servicekit import eventloop
from cairn_servicekit.backoff import Backoff
from cairn_servicekit.bus import connect_nats
from cairn_servicekit.consumer import DeadLetters, durable_pull, fetch_batch
from cairn_servicekit.health import nats_check, postgres_check, probe
from cairn_servicekit.http_port import HttpPort
from cairn_storage import create_engine, maintenance_sessionmaker, make_sessionmaker
from cairn_storage.models import Memory
from cairn_storage.usage import UsageMeter, estimate_tokens
from cairn_storage.vector_search import vector_literal

log = logging.getLogger(__name__)

SERVICE = "memory-embedder"
DURABLE = subjects.EMBEDDER_DURABLE

# Only rows whose stored hash differs are written: a redelivery never rewrites a vector.
_WRITE = text(
    "UPDATE memories SET embedding = CAST(:vector AS vector), embedding_content_hash = :hash, "
    "embedding_model = :model WHERE id = :id AND embedding_content_hash IS DISTINCT FROM :hash"
)


class EmbeddingWorker:
    def __init__(
        self,
        sessionmaker: async_sessionmaker[AsyncSession],
        embedders: TenantEmbedders,
        settings: MemorySettings,
        meter: UsageMeter,
    ) -> None:
        self._sm = sessionmaker
        self._embedders = embedders
        self._settings = settings
        self._meter = meter
        self._burst = BurstGate(settings.embed_burst_rate, settings.embed_burst_max_wait_seconds)

    async def embed_ids(self, tenant_id: str, ids: list[uuid.UUID]) -> int:
        """Embed the tenant's rows among `ids` that still need it, with the tenant's embedder."""
        start = time.perf_counter()
        written = await self._embed_ids(tenant_id, ids)
        if written:
            EMBED_BATCH.observe(time.perf_counter() - start)
            EMBEDDED_ROWS.inc(written)
        return written

    async def _embed_ids(self, tenant_id: str, ids: list[uuid.UUID]) -> int:
        embedder = await self._embedders.for_tenant(tenant_id)
        async with self._sm.begin() as session:
            # Maintenance by primary key across subjects: the worker acts for no caller.
            rows = (
                await session.execute(
                    select(Memory.id, Memory.subject_id, Memory.text, Memory.embedding_content_hash).where(
                        Memory.tenant_id == uuid.UUID(tenant_id), Memory.id.in_(ids)
                    )
                )
            ).all()
            todo = [(r, content_hash(r.text)) for r in rows]
            # Subject order: each row's UPDATE moves its subject's vector version (migration 0018), so two
            # workers lock those version rows in one order and never deadlock on them.
            todo = sorted(
                ((r, digest) for r, digest in todo if r.embedding_content_hash != digest),
                key=lambda item: (item[0].subject_id, item[0].id),
            )
            if not todo:
                return 0
            vectors = await embed_with_chunks(embedder, [r.text for r, _ in todo])
            await session.execute(
                _WRITE,
                [
                    {"id": r.id, "vector": vector_literal(vecs[0]), "hash": digest, "model": embedder.name}
                    for (r, digest), vecs in zip(todo, vectors, strict=True)
                ],
            )
            for (r, _), vecs in zip(todo, vectors, strict=True):
                if len(vecs) > 1:
                    await replace_chunks(session, uuid.UUID(tenant_id), r.subject_id, r.id, vecs[1:])
        self._meter.add(tenant_id, "embedded_tokens", estimate_tokens(r.text for r, _ in todo))
        return len(todo)

    async def handle_batch(self, msgs: list[Msg], dead: DeadLetters) -> None:
        """One tenant's broken provider (or poison message) only delays that tenant's messages."""
        by_tenant: dict[str, list[tuple[uuid.UUID, Msg]]] = defaultdict(list)
        for msg in msgs:
            try:
                event = MemoryCreated.model_validate_json(msg.data)
                by_tenant[str(uuid.UUID(event.tenant_id))].append((uuid.UUID(event.memory_id), msg))
            except (ValidationError, ValueError) as exc:
                await dead.give_up(msg, DeadLetterReason.malformed, f"{type(exc).__name__}: {exc}")
        for tenant_id, items in by_tenant.items():
            try:
                await self._traced_embed(tenant_id, items)
            except Exception as exc:  # provider or database down, or a poison row: retry, bounded
                if isinstance(exc, EmbeddingError):
                    EMBED_DEFERRED.inc(len(items))
                log.warning(
                    "tenant %s: embedding %d rows failed (%s: %s); redelivering with backoff",
                    tenant_id, len(items), type(exc).__name__, exc,
                )  # fmt: skip
                if isinstance(exc, EmbeddingError) or len(items) == 1:
                    for _, msg in items:
                        await dead.failed(msg, f"{type(exc).__name__}: {exc}")
                    continue
                # Not the provider: maybe one poison row. Alone, its batch-mates go through.
                await self._one_by_one(tenant_id, items, dead)
                continue
            for _, msg in items:
                await msg.ack()

    async def _traced_embed(self, tenant_id: str, items: list[tuple[uuid.UUID, Msg]]) -> None:
        """One consumer span per tenant batch, linked to each writer's trace (a batch has many parents)."""
        links = [link for _, msg in items if (link := link_from(msg.headers)) is not None]
        with tracer().start_as_current_span(
            f"process {subjects.MEMORY_CREATED}", kind=SpanKind.CONSUMER, links=links
        ) as span:
            span.set_attribute("messaging.system", "nats")
            span.set_attribute("messaging.batch.message_count", len(items))
            set_scope_attributes(span, tenant_id, None)
            await self.embed_ids(tenant_id, [memory_id for memory_id, _ in items])

    async def backlog_once(self) -> None:
        """Pending rows and the oldest one's age (the partial index on rows without a vector)."""
        async with self._sm() as session:
            row = (
                await session.execute(
                    text(
                        "SELECT count(*) AS n, coalesce(extract(epoch FROM now() - min(created_at)), 0) AS age "
                        "FROM memories WHERE embedding IS NULL"
                    )
                )
            ).one()
        EMBED_BACKLOG.set(row.n)
        EMBED_LAG.set(float(row.age))

    async def _backlog_loop(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                await self.backlog_once()
            except Exception:
                log.warning("embedding backlog query failed", exc_info=True)
            await asyncio.sleep(self._settings.embed_backlog_poll_seconds)

    async def _one_by_one(
        self, tenant_id: str, items: list[tuple[uuid.UUID, Msg]], dead: DeadLetters
    ) -> None:
        for memory_id, msg in items:
            try:
                await self.embed_ids(tenant_id, [memory_id])
            except Exception as exc:
                await dead.failed(msg, f"{type(exc).__name__}: {exc}")
                continue
            await msg.ack()

    async def sweep_once(self) -> int:
        async with self._sm() as session:
            pending = (
                await session.execute(
                    text(
                        "SELECT id, tenant_id FROM memories WHERE embedding_content_hash IS NULL "
                        "AND created_at < now() - make_interval(secs => :age) ORDER BY created_at LIMIT 500"
                    ),
                    {"age": self._settings.embed_sweep_min_age_seconds},
                )
            ).all()
        by_tenant: dict[str, list[uuid.UUID]] = defaultdict(list)
        for row in pending:
            by_tenant[str(row.tenant_id)].append(row.id)
        written = 0
        for tenant_id, ids in by_tenant.items():
            try:
                written += await self.embed_ids(tenant_id, ids)
            except EmbeddingError:
                log.warning("sweep: tenant %s embedder unavailable", tenant_id)
            except Exception:  # one poison row must not stop the sweep for every other row
                written += await self._sweep_one_by_one(tenant_id, ids)
        return written

    async def _sweep_one_by_one(self, tenant_id: str, ids: list[uuid.UUID]) -> int:
        written = 0
        for memory_id in ids:
            try:
                written += await self.embed_ids(tenant_id, [memory_id])
            except Exception as exc:
                log.warning("sweep: memory %s not embedded (%s: %s)", memory_id, type(exc).__name__, exc)
        return written

    async def run(self, nc: NATS, stop: asyncio.Event) -> None:
        js = nc.jetstream()
        await ensure_stream(js, self._settings.events_stream_replicas)
        redelivery = self._settings.redelivery()
        sub = await durable_pull(
            js,
            subjects.MEMORY_CREATED,
            DURABLE,
            subjects.EVENTS_STREAM,
            ack_wait=60,
            redelivery=redelivery,
            max_ack_pending=5000,
        )
        declare_consumer(DURABLE)
        dead = DeadLetters(js, DURABLE, redelivery)
        sweeper = asyncio.create_task(self._sweep_loop(stop))
        backlog = asyncio.create_task(self._backlog_loop(stop))
        meter = asyncio.create_task(self._meter.run())
        backoff = Backoff(initial=0.5, cap=15.0)
        try:
            while not stop.is_set():
                try:
                    msgs = await fetch_batch(
                        sub, self._settings.embed_batch_size, self._settings.embed_fetch_timeout_seconds
                    )
                    if msgs:
                        await self.handle_batch(msgs, dead)
                    if len(msgs) == self._settings.embed_batch_size:  # a backlog: maybe a write burst
                        EMBED_BURST_WAIT.inc(await self._burst.wait(lambda: _pending(sub), stop))
                    backoff.reset()
                except Exception as exc:  # NATS gone mid-ack, database gone mid-batch: wait, go on
                    delay = backoff.next()
                    log.warning("embedding loop: %s: %s; retrying in %.1f s", type(exc).__name__, exc, delay)
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(stop.wait(), delay)
        finally:
            for task in (sweeper, backlog, meter):
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            # An open pull subscription would hold nc.drain() for its whole drain timeout.
            with contextlib.suppress(Exception):
                await sub.unsubscribe()

    async def _sweep_loop(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            await asyncio.sleep(self._settings.embed_sweep_interval_seconds)
            try:
                swept = await self.sweep_once()
                if swept:
                    log.info("sweep embedded %d rows whose event was lost", swept)
            except Exception:
                log.warning("embedding sweep failed", exc_info=True)


async def _pending(sub: JetStreamContext.PullSubscription) -> int:
    """Messages the consumer has not delivered yet."""
    return int((await sub.consumer_info()).num_pending or 0)


async def serve(settings: MemorySettings, embedding: EmbeddingSettings) -> None:
    setup_telemetry("memory-embedder", TelemetrySettings(log_level=settings.log_level))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    # Up before the model loads (startup probes see a live process), down after everything else.
    port = HttpPort(SERVICE, settings.http_host, settings.http_port)
    await port.start()
    try:
        engine = create_engine(settings.database_url, pool_size=2)
        embedder = await asyncio.to_thread(build_embedder, embedding)  # loading the model blocks
        box = secret_box(settings.provider_secrets_key)
        embedders = TenantEmbedders(
            embedder,
            make_sessionmaker(engine),
            box,
            dim=embedding.dim,
            ttl_seconds=settings.provider_cache_ttl_seconds,
        )
        nc = await connect_nats(settings, SERVICE)
        sessionmaker = make_sessionmaker(engine)
        meter = UsageMeter(sessionmaker, settings.usage_flush_interval_seconds)
        # The worker reads and writes pending rows of every tenant and subject: an audited maintenance path.
        rows = maintenance_sessionmaker(sessionmaker, "embedding_worker")
        worker = asyncio.create_task(EmbeddingWorker(rows, embedders, settings, meter).run(nc, stop))
        eventloop.settle_gc()

        async def consuming() -> None:
            if worker.done():
                raise RuntimeError("the consumer loop stopped")

        port.ready_when(
            [postgres_check(make_sessionmaker(engine)), nats_check(nc), probe("consumer", consuming)]
        )
        try:
            await worker
        finally:
            port.stopping()
            shutdown_tracing()
            await nc.drain()
            await embedders.close()
            await embedder.close()
            await close_shared_transport()
            await engine.dispose()
    finally:
        await port.stop()


def lower_priority(settings: MemorySettings) -> None:
    """Yield the CPU to the request paths; called before the model's threads start, which inherit it."""
    os.nice(settings.embed_nice)
    if settings.embed_sched_idle and hasattr(os, "sched_setscheduler"):
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))


def main() -> None:
    settings = MemorySettings()  # scope keys come from the environment
    lower_priority(settings)
    eventloop.run(serve(settings, EmbeddingSettings()))


if __name__ == "__main__":
    main()
