"""Readiness: every backing service and every Cairn service must answer."""

import asyncio

from nats.aio.client import Client as NATS
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from temporalio.client import Client as TemporalClient

from cairn_contracts import subjects
from cairn_contracts.health import ReadyReport
from cairn_servicekit import ServiceClient
from cairn_servicekit.health import HealthCheck, postgres_check, probe


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


def readiness_checks(
    sessionmaker: async_sessionmaker[AsyncSession],
    nc: NATS,
    temporal: TemporalProbe,
    services: ServiceClient,
    timeout: float,
) -> list[HealthCheck]:
    """One check per component `/readyz` names: the backing services, then every Cairn service."""

    async def nats_connected() -> None:
        if not nc.is_connected:
            raise ConnectionError("not connected")
        await nc.flush(timeout=1)

    def service(name: str) -> HealthCheck:
        async def healthy() -> None:
            reply = await services.health(name, timeout=timeout)
            if reply.status != "ok":
                down = ", ".join(c.name for c in reply.components if c.status != "ok")
                raise RuntimeError(f"unhealthy: {down}")

        return probe(name, healthy, timeout)

    return [
        postgres_check(sessionmaker),
        probe("nats", nats_connected, timeout),
        probe("temporal", temporal.check, timeout),
        *(service(name) for name in subjects.SERVICES),
    ]


async def readiness(checks: list[HealthCheck]) -> ReadyReport:
    results = await asyncio.gather(*(check() for check in checks))
    return ReadyReport(
        status="ok" if all(c.status == "ok" for c in results) else "down",
        components={c.name: c for c in results},
    )
