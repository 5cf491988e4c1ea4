"""Health checks services attach to their health subject."""

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from nats.aio.client import Client as NATS
from pydantic import SecretStr
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from cairn_contracts.health import ComponentHealth

if TYPE_CHECKING:
    from temporalio.client import Client as TemporalClient

HealthCheck = Callable[[], Awaitable[ComponentHealth]]


def probe(name: str, check: Callable[[], Awaitable[object]], timeout: float = 1.0) -> HealthCheck:
    """Wrap `check` as a health check: ok when it returns within `timeout`, down (with the error) otherwise."""

    async def run() -> ComponentHealth:
        try:
            await asyncio.wait_for(check(), timeout)
        except Exception as exc:  # any failure is "down"; the detail names it
            detail = type(exc).__name__ + (f": {exc}" if str(exc) else "")
            return ComponentHealth(name=name, status="down", detail=detail)
        return ComponentHealth(name=name, status="ok")

    return run


def postgres_check(sessionmaker: async_sessionmaker[AsyncSession]) -> HealthCheck:
    async def select_one() -> None:
        async with sessionmaker() as session:
            await session.execute(text("SELECT 1"))

    return probe("postgres", select_one)


def nats_check(nc: NATS, timeout: float = 1.0) -> HealthCheck:
    async def connected() -> None:
        if not nc.is_connected:
            raise ConnectionError("not connected")
        await nc.flush(timeout=1)

    return probe("nats", connected, timeout)


def temporal_check(client: "TemporalClient") -> HealthCheck:
    async def check_health() -> None:
        await client.service_client.check_health()

    return probe("temporal", check_health)


async def connect_temporal(
    address: str, namespace: str, payload_keys: "str | SecretStr | None", attempts: int = 60
) -> "TemporalClient":
    """Connect to Temporal, retrying while it starts (a service may come up first). Payloads are pydantic
    models, encrypted with `CAIRN_PAYLOAD_KEYS`: every Cairn client and worker uses this converter."""
    from temporalio.client import Client

    from cairn_observability.tracing import temporal_interceptors
    from cairn_servicekit.payload_codec import encrypted_converter

    if not payload_keys:
        raise ValueError("Temporal payloads are encrypted: set CAIRN_PAYLOAD_KEYS")
    if isinstance(payload_keys, SecretStr):
        payload_keys = payload_keys.get_secret_value()
    converter = encrypted_converter(payload_keys)
    for attempt in range(attempts):
        try:
            return await Client.connect(
                address,
                namespace=namespace,
                data_converter=converter,
                interceptors=temporal_interceptors(),
            )
        except Exception:
            if attempt == attempts - 1:
                raise
            await asyncio.sleep(0.5)
    raise RuntimeError("unreachable")
