"""`python -m cairn_recall`: serve recall over NATS."""

import asyncio
from contextlib import AsyncExitStack

from nats.aio.client import Client as NATS

from cairn_servicekit import NatsService, ServiceSettings, run_service
from cairn_servicekit.health import postgres_check
from cairn_storage import create_engine, make_sessionmaker


def main() -> None:
    settings = ServiceSettings()  # scope_secret comes from the environment

    async def wire(stack: AsyncExitStack, nc: NATS) -> NatsService:
        engine = create_engine(settings.database_url)
        stack.push_async_callback(engine.dispose)
        service = NatsService("recall", settings)
        service.health_check(postgres_check(make_sessionmaker(engine)))
        return service

    asyncio.run(run_service("recall", settings, wire))


if __name__ == "__main__":
    main()
