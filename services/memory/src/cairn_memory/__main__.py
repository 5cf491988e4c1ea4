"""`python -m cairn_memory`: serve the memory subjects over NATS."""

from contextlib import AsyncExitStack

from nats.aio.client import Client as NATS

from cairn_memory.app import setup
from cairn_memory.settings import MemorySettings
from cairn_servicekit import NatsService, eventloop, run_service


def main() -> None:
    settings = MemorySettings()  # scope keys come from the environment

    async def wire(stack: AsyncExitStack, nc: NATS) -> NatsService:
        return await setup(settings, stack, nc)

    eventloop.run(run_service("memory", settings, wire))


if __name__ == "__main__":
    main()
