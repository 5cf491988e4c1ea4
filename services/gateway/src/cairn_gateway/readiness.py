"""Readiness: every backing service and every Cairn service must answer."""

import asyncio
from collections.abc import Awaitable

from nats.aio.client import Client as NATS
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine
from temporalio.client import Client as TemporalClient

from cairn_contracts import subjects
from cairn_contracts.health import ComponentHealth, ReadyReport
from cairn_servicekit import ServiceClient


class TemporalProbe:
    """Keeps one Temporal client; connects lazily because Temporal may come up after the gateway."""

    def __init__(self, address: str, namespace: str) -> None:
        self._address = address
        self._namespace = namespace
        self._client: TemporalClient | None = None

    async def check(self) -> None:
        if self._client is None:
            self._client = await TemporalClient.connect(self._address, namespace=self._namespace)
        await self._client.service_client.check_health()


async def _probe(name: str, check: Awaitable[object], timeout: float) -> ComponentHealth:
    try:
        await asyncio.wait_for(check, timeout)
    except Exception as exc:  # any failure means "down"; the detail names it
        return ComponentHealth(
            name=name, status="down", detail=type(exc).__name__ + (f": {exc}" if str(exc) else "")
        )
    return ComponentHealth(name=name, status="ok")


async def _postgres(engine: AsyncEngine) -> None:
    async with engine.connect() as conn:
        await conn.execute(text("SELECT 1"))


async def _nats(nc: NATS) -> None:
    if not nc.is_connected:
        raise ConnectionError("not connected")
    await nc.flush(timeout=1)


async def _service(client: ServiceClient, name: str, timeout: float) -> None:
    reply = await client.health(name, timeout=timeout)
    if reply.status != "ok":
        down = ", ".join(c.name for c in reply.components if c.status != "ok")
        raise RuntimeError(f"unhealthy: {down}")


async def readiness(
    engine: AsyncEngine, nc: NATS, temporal: TemporalProbe, services: ServiceClient, timeout: float
) -> ReadyReport:
    checks: dict[str, Awaitable[object]] = {
        "postgres": _postgres(engine),
        "nats": _nats(nc),
        "temporal": temporal.check(),
        **{name: _service(services, name, timeout) for name in subjects.SERVICES},
    }
    results = await asyncio.gather(*(_probe(name, check, timeout) for name, check in checks.items()))
    components = {c.name: c for c in results}
    return ReadyReport(
        status="ok" if all(c.status == "ok" for c in results) else "down", components=components
    )
