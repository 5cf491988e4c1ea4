"""`python -m cairn_knowledge`: serve the knowledge subjects over NATS."""

import asyncio
from contextlib import AsyncExitStack

from nats.aio.client import Client as NATS

from cairn_knowledge.app import setup
from cairn_knowledge.settings import KnowledgeSettings
from cairn_servicekit import NatsService, run_service


def main() -> None:
    settings = KnowledgeSettings()  # scope keys come from the environment

    async def wire(stack: AsyncExitStack, nc: NATS) -> NatsService:
        return await setup(settings, stack, nc)

    asyncio.run(run_service("knowledge", settings, wire))


if __name__ == "__main__":
    main()
