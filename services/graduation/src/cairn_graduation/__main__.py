"""`python -m cairn_graduation`: the on-demand trigger over NATS, the Temporal worker, the sweep schedule."""

import asyncio
import contextlib
from contextlib import AsyncExitStack

from nats.aio.client import Client as NATS

from cairn_graduation.activities import GraduationActivities
from cairn_graduation.handlers import register
from cairn_graduation.settings import GraduationSettings
from cairn_graduation.trigger import GraduationTrigger
from cairn_graduation.worker import build_worker, ensure_sweep_schedule
from cairn_servicekit import NatsService, ServiceClient, run_service
from cairn_servicekit.health import connect_temporal, postgres_check, probe, temporal_check
from cairn_storage import create_engine, make_sessionmaker

SERVICE = "graduation"


def main() -> None:
    settings = GraduationSettings()

    async def wire(stack: AsyncExitStack, nc: NATS) -> NatsService:
        engine = create_engine(settings.database_url, pool_size=5)
        stack.push_async_callback(engine.dispose)
        sessionmaker = make_sessionmaker(engine)
        temporal = await connect_temporal(
            settings.temporal_address, settings.temporal_namespace, settings.payload_keys
        )
        services = ServiceClient(nc, settings.scope_signer, settings.request_timeout_seconds)
        worker = build_worker(temporal, settings, GraduationActivities(sessionmaker, services))
        running = asyncio.create_task(worker.run())

        async def stop_worker() -> None:
            await worker.shutdown()
            with contextlib.suppress(asyncio.CancelledError):
                await running

        stack.push_async_callback(stop_worker)
        await ensure_sweep_schedule(temporal, settings)

        async def worker_running() -> None:
            if running.done():
                raise RuntimeError("the graduation worker stopped")

        service = NatsService(SERVICE, settings)
        register(service, GraduationTrigger(sessionmaker, temporal, settings))
        service.health_check(postgres_check(sessionmaker))
        service.health_check(temporal_check(temporal))
        service.health_check(probe("worker", worker_running))
        return service

    asyncio.run(run_service(SERVICE, settings, wire))


if __name__ == "__main__":
    main()
