"""`python -m cairn_promotion`: the promotion trigger over NATS and the Temporal worker."""

import asyncio
import contextlib
from contextlib import AsyncExitStack

from nats.aio.client import Client as NATS

from cairn_embeddings.transport import close_shared_transport
from cairn_promotion.activities import PromotionActivities
from cairn_promotion.compilers import TenantCompilers
from cairn_promotion.handlers import register
from cairn_promotion.settings import PromotionSettings
from cairn_promotion.trigger import PromotionTrigger
from cairn_promotion.worker import build_compiler, build_worker, ensure_sweep_schedule
from cairn_providers import secret_box
from cairn_servicekit import NatsService, ServiceClient, run_service
from cairn_servicekit.health import connect_temporal, postgres_check, temporal_check
from cairn_servicekit.runtime import run_in_background
from cairn_storage import create_engine, make_sessionmaker
from cairn_storage.usage import UsageMeter


def main() -> None:
    settings = PromotionSettings()  # refuses to start unless sweep_interval < sweep_window < session_ttl

    async def wire(stack: AsyncExitStack, nc: NATS) -> NatsService:
        engine = create_engine(settings.database_url, pool_size=5)
        stack.push_async_callback(engine.dispose)
        # Run after the worker stops: the LLM compilers post through the process's shared HTTP session.
        stack.push_async_callback(close_shared_transport)
        sessionmaker = make_sessionmaker(engine)
        temporal = await connect_temporal(
            settings.temporal_address, settings.temporal_namespace, settings.payload_keys
        )
        box = secret_box(settings.provider_secrets_key)
        compilers = TenantCompilers(
            await asyncio.to_thread(build_compiler, settings),
            sessionmaker,
            box,
            timeout=settings.compile_timeout_seconds,
            ttl_seconds=settings.provider_cache_ttl_seconds,
        )
        services = ServiceClient(nc, settings.scope_signer, settings.request_timeout_seconds)
        meter = UsageMeter(sessionmaker, settings.usage_flush_interval_seconds)
        run_in_background(stack, meter.run())
        activities = PromotionActivities(sessionmaker, compilers, services, settings, meter)
        worker = build_worker(temporal, settings, activities)
        running = asyncio.create_task(worker.run())

        async def stop_worker() -> None:
            await worker.shutdown()
            with contextlib.suppress(asyncio.CancelledError):
                await running

        stack.push_async_callback(stop_worker)
        await ensure_sweep_schedule(temporal, settings)
        service = NatsService("promotion", settings)
        register(service, PromotionTrigger(sessionmaker, temporal, settings))
        service.health_check(postgres_check(sessionmaker))
        service.health_check(temporal_check(temporal))
        return service

    asyncio.run(run_service("promotion", settings, wire))


if __name__ == "__main__":
    main()
