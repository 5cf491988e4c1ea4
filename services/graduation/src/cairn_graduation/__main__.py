"""`python -m cairn_graduation`: the graduation service's NATS face and its Temporal connection."""

import asyncio
from contextlib import AsyncExitStack

from nats.aio.client import Client as NATS

from cairn_servicekit import NatsService, ServiceSettings, run_service
from cairn_servicekit.health import connect_temporal, postgres_check, temporal_check
from cairn_storage import create_engine, make_sessionmaker

SERVICE = "graduation"
TASK_QUEUE = "cairn-graduation"


def main() -> None:
    settings = ServiceSettings()  # scope_secret comes from the environment

    async def wire(stack: AsyncExitStack, nc: NATS) -> NatsService:
        engine = create_engine(settings.database_url, pool_size=2)
        stack.push_async_callback(engine.dispose)
        temporal = await connect_temporal(settings.temporal_address, settings.temporal_namespace)
        service = NatsService(SERVICE, settings)
        service.health_check(postgres_check(make_sessionmaker(engine)))
        service.health_check(temporal_check(temporal))
        return service

    asyncio.run(run_service(SERVICE, settings, wire))


if __name__ == "__main__":
    main()
