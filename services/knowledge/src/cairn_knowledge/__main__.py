"""`python -m cairn_knowledge`: serve the knowledge subjects over NATS."""

from contextlib import AsyncExitStack

from nats.aio.client import Client as NATS

from cairn_knowledge.app import setup
from cairn_knowledge.settings import KnowledgeSettings
from cairn_servicekit import NatsService, eventloop, run_service


def main() -> None:
    settings = KnowledgeSettings()  # scope keys come from the environment

    async def wire(stack: AsyncExitStack, nc: NATS) -> NatsService:
        return await setup(settings, stack, nc)

    eventloop.run(run_service("knowledge", settings, wire))


if __name__ == "__main__":
    main()
