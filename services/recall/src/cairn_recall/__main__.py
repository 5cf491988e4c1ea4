"""`python -m cairn_recall`: serve recall over NATS."""

import asyncio
import contextlib
from contextlib import AsyncExitStack

from nats.aio.client import Client as NATS

from cairn_embeddings import EmbeddingSettings, build_embedder
from cairn_embeddings.transport import close_shared_transport
from cairn_providers import TenantEmbedders, secret_box
from cairn_recall.events import HotnessPublisher
from cairn_recall.handlers import register, register_merged
from cairn_recall.merged import MergedRecall, MergedRecallSettings
from cairn_recall.service import RecallService, subject_ann_options
from cairn_recall.settings import RecallSettings
from cairn_recall.store import HotReads
from cairn_recall.subject_index import SubjectIndexes
from cairn_servicekit import NatsService, ServiceClient, eventloop, run_service
from cairn_servicekit.health import postgres_check
from cairn_storage import create_engine, make_sessionmaker
from cairn_storage.scoped_pool import ScopedReads
from cairn_storage.usage import UsageMeter
from cairn_storage.vector_search import probe_iterative_scan


async def _cancel(task: "asyncio.Task[None]") -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


def main() -> None:
    settings = RecallSettings()
    embedding = EmbeddingSettings()

    async def wire(stack: AsyncExitStack, nc: NATS) -> NatsService:
        engine = create_engine(settings.database_url)
        stack.push_async_callback(engine.dispose)
        sessionmaker = make_sessionmaker(engine)
        # Loading (or, once per machine, building) the model is blocking work: keep it off the loop.
        embedder = await asyncio.to_thread(build_embedder, embedding)
        # Pushed first, run last: tenants' OpenAI-compatible providers share the process's HTTP session.
        stack.push_async_callback(close_shared_transport)
        stack.push_async_callback(embedder.close)
        box = secret_box(settings.provider_secrets_key)
        embedders = TenantEmbedders(
            embedder, sessionmaker, box, dim=embedding.dim, ttl_seconds=settings.provider_cache_ttl_seconds
        )
        stack.push_async_callback(embedders.close)
        publisher = HotnessPublisher(
            nc.jetstream(), settings.hot_publish_queue, settings.hot_cooldown_seconds
        )
        stack.push_async_callback(publisher.drain)
        iterative = await probe_iterative_scan(sessionmaker, settings.hnsw_iterative_scan)
        service = NatsService("recall", settings)
        index_engine = create_engine(settings.index_database_url or settings.database_url, pool_size=2)
        stack.push_async_callback(index_engine.dispose)
        subject_indexes = SubjectIndexes(
            index_engine.execution_options(cairn_maintenance="subject_index"),
            min_rows=settings.subject_index_min_rows,
            max_indexes=settings.subject_index_max,
            maintenance_work_mem=settings.subject_index_maintenance_work_mem,
        )
        meter = UsageMeter(sessionmaker, settings.usage_flush_interval_seconds)
        metering = asyncio.create_task(meter.run())
        stack.push_async_callback(_cancel, metering)
        reads = make_sessionmaker(engine.execution_options(isolation_level="AUTOCOMMIT"))  # shares the pool
        # Large subjects' vector reads: a pool of their own whose connections carry the ANN options, so a
        # read is one statement instead of BEGIN, the options, the read and COMMIT.
        ann_engine = create_engine(
            settings.database_url,
            pool_size=settings.subject_ann_pool_size,
            max_overflow=settings.subject_ann_pool_overflow,
            server_settings=subject_ann_options(settings, iterative),
        )
        stack.push_async_callback(ann_engine.dispose)
        subject_ann = make_sessionmaker(ann_engine.execution_options(isolation_level="AUTOCOMMIT"))
        hot_reads = await ScopedReads.open(settings.database_url, size=settings.hot_read_pool_size)
        stack.push_async_callback(hot_reads.close)
        recall = RecallService(
            sessionmaker,
            reads,
            embedders,
            settings,
            iterative,
            publisher,
            subject_indexes,
            meter,
            subject_ann,
            HotReads(hot_reads),
        )
        register(service, recall)
        # Merged recall: memory in-process, knowledge over NATS; the shown-set lives in PostgreSQL.
        merged_settings = MergedRecallSettings()
        merged = MergedRecall(
            sessionmaker, reads, recall, embedders, ServiceClient(nc, settings.scope_signer), merged_settings
        )
        register_merged(service, merged)
        pruner = asyncio.create_task(merged.prune_loop())
        stack.callback(pruner.cancel)
        service.health_check(postgres_check(sessionmaker))
        return service

    eventloop.run(run_service("recall", settings, wire))


if __name__ == "__main__":
    main()
