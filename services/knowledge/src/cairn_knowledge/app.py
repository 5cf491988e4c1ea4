"""Knowledge service wiring: database, the tenant embedders, the gate and the handlers."""

import asyncio
from contextlib import AsyncExitStack

from nats.aio.client import Client as NATS

from cairn_embeddings import EmbeddingSettings, build_embedder
from cairn_embeddings.transport import close_shared_transport
from cairn_knowledge.gate import NoveltyGate
from cairn_knowledge.handlers import register
from cairn_knowledge.service import KnowledgeService
from cairn_knowledge.settings import KnowledgeSettings
from cairn_providers import TenantEmbedders, secret_box
from cairn_servicekit import NatsService
from cairn_servicekit.health import postgres_check
from cairn_servicekit.runtime import run_in_background
from cairn_storage import create_engine, make_sessionmaker
from cairn_storage.usage import UsageMeter
from cairn_storage.vector_search import probe_iterative_scan


async def setup(settings: KnowledgeSettings, stack: AsyncExitStack, nc: NATS) -> NatsService:
    engine = create_engine(settings.database_url)
    stack.push_async_callback(engine.dispose)
    sessionmaker = make_sessionmaker(engine)
    reads = make_sessionmaker(engine.execution_options(isolation_level="AUTOCOMMIT"))  # shares the pool
    embedding = EmbeddingSettings()
    # Articles are embedded at write time (the gate needs the vector); loading the model blocks.
    embedder = await asyncio.to_thread(build_embedder, embedding)
    # Pushed first, run last: tenants' OpenAI-compatible providers share the process's HTTP session.
    stack.push_async_callback(close_shared_transport)
    stack.push_async_callback(embedder.close)
    box = secret_box(settings.provider_secrets_key)
    embedders = TenantEmbedders(
        embedder, sessionmaker, box, dim=embedding.dim, ttl_seconds=settings.provider_cache_ttl_seconds
    )
    stack.push_async_callback(embedders.close)
    iterative = await probe_iterative_scan(sessionmaker, settings.knowledge_hnsw_iterative_scan)
    service = NatsService("knowledge", settings)
    meter = UsageMeter(sessionmaker, settings.usage_flush_interval_seconds)
    run_in_background(stack, meter.run())
    register(
        service,
        NoveltyGate(
            sessionmaker,
            embedders,
            settings.knowledge_near_dup_threshold,
            settings.knowledge_max_chunks,
            meter,
        ),
        KnowledgeService(sessionmaker, reads, embedders, settings, iterative, meter),
    )
    service.health_check(postgres_check(sessionmaker))
    return service
