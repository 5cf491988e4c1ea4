"""Memory service wiring: database, JetStream, handlers, the TTL prune loop."""

import asyncio
import contextlib
import logging
from contextlib import AsyncExitStack

from nats.aio.client import Client as NATS
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from cairn_embeddings import EmbeddingSettings, build_embedder
from cairn_embeddings.transport import close_shared_transport
from cairn_memory.events import CreatedPublisher, ensure_stream
from cairn_memory.handlers import register
from cairn_memory.hotness import consume as consume_recalled
from cairn_memory.promoted import PromotedWriter
from cairn_memory.service import MemoryService
from cairn_memory.settings import MemorySettings
from cairn_memory.store import prune_expired_turns
from cairn_providers import TenantEmbedders, secret_box
from cairn_servicekit import NatsService
from cairn_servicekit.health import postgres_check
from cairn_storage import create_engine, declare_maintenance, make_sessionmaker
from cairn_storage.usage import TOP_TENANTS, UsageMeter, snapshot_live_rows

log = logging.getLogger(__name__)


async def prune_loop(sessionmaker: async_sessionmaker[AsyncSession], interval: float) -> None:
    """Delete expired session turns on a schedule (reads already hide them before this runs)."""
    while True:
        try:
            async with sessionmaker.begin() as session:
                await declare_maintenance(session, "session_ttl_prune")
                pruned = await prune_expired_turns(session)
            if pruned:
                log.info("pruned %d expired session turns", pruned)
        except Exception:
            log.warning("session prune failed; retrying next interval", exc_info=True)
        await asyncio.sleep(interval)


async def usage_loop(sessionmaker: async_sessionmaker[AsyncSession], settings: MemorySettings) -> None:
    """Today's live-row count of every tenant into `tenant_usage`, and the top-N gauge from it."""
    while True:
        try:
            await snapshot_live_rows(sessionmaker)
            await TOP_TENANTS.refresh(sessionmaker, settings.usage_top_tenants)
        except Exception:
            log.warning("usage snapshot failed; retrying next interval", exc_info=True)
        await asyncio.sleep(settings.usage_snapshot_interval_seconds)


async def setup(settings: MemorySettings, stack: AsyncExitStack, nc: NATS) -> NatsService:
    engine = create_engine(settings.database_url, pool_size=16, max_overflow=0)  # a fixed pool: no churn
    stack.push_async_callback(engine.dispose)
    sessionmaker = make_sessionmaker(engine)
    js = nc.jetstream()
    await ensure_stream(js, settings.events_stream_replicas)
    service = NatsService("memory", settings)
    # Promotion embeds synchronously (near-duplicates must be caught at write time): load the model here too.
    embedder = await asyncio.to_thread(build_embedder, EmbeddingSettings())
    # Pushed first, run last: tenants' OpenAI-compatible providers share the process's HTTP session.
    stack.push_async_callback(close_shared_transport)
    stack.push_async_callback(embedder.close)
    box = secret_box(settings.provider_secrets_key)
    embedders = TenantEmbedders(embedder, sessionmaker, box, ttl_seconds=settings.provider_cache_ttl_seconds)
    stack.push_async_callback(embedders.close)
    meter = UsageMeter(sessionmaker, settings.usage_flush_interval_seconds)
    register(
        service,
        MemoryService(
            sessionmaker,
            engine,
            settings,
            CreatedPublisher(js),
            meter,
        ),
        PromotedWriter(sessionmaker, embedders, settings, meter),
    )
    service.health_check(postgres_check(sessionmaker))
    background = [
        asyncio.create_task(prune_loop(sessionmaker, settings.session_prune_interval_seconds)),
        asyncio.create_task(
            consume_recalled(nc, sessionmaker, settings.hot_cooldown_seconds, settings.redelivery())
        ),
        asyncio.create_task(meter.run()),
        asyncio.create_task(usage_loop(sessionmaker, settings)),
    ]

    async def stop_background() -> None:
        for task in background:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    stack.push_async_callback(stop_background)
    return service
