"""Readiness: every backing service and every Cairn service must answer."""

import asyncio

import httpx
from nats.aio.client import Client as NATS
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from temporalio.client import Client as TemporalClient

from cairn_contracts import subjects
from cairn_contracts.health import ReadyReport
from cairn_servicekit import ServiceClient
from cairn_servicekit.health import HealthCheck, nats_check, postgres_check, probe


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


def http_ready(name: str, base_url: str | None, client: httpx.AsyncClient, timeout: float) -> HealthCheck:
    """A process without NATS subjects (the embedding worker) is asked on its own HTTP port's /readyz."""

    async def ready() -> None:
        if not base_url:
            raise RuntimeError(f"CAIRN_{name.upper().replace('-', '_')}_HTTP_URL is not set")
        response = await client.get(f"{base_url.rstrip('/')}/readyz", timeout=timeout)
        if response.status_code != 200:
            down = [c["name"] for c in response.json().get("components", []) if c.get("status") != "ok"]
            raise RuntimeError(f"unhealthy: {', '.join(down) or response.status_code}")

    return probe(name, ready, timeout)


def readiness_checks(
    sessionmaker: async_sessionmaker[AsyncSession],
    nc: NATS,
    temporal: TemporalProbe,
    services: ServiceClient,
    timeout: float,
    embedder: HealthCheck,
) -> list[HealthCheck]:
    """One check per component `/readyz` names: the backing services, then every Cairn process."""

    def service(name: str) -> HealthCheck:
        async def healthy() -> None:
            reply = await services.health(name, timeout=timeout)
            if reply.status != "ok":
                down = ", ".join(c.name for c in reply.components if c.status != "ok")
                raise RuntimeError(f"unhealthy: {down}")

        return probe(name, healthy, timeout)

    return [
        postgres_check(sessionmaker),
        nats_check(nc, timeout),
        probe("temporal", temporal.check, timeout),
        *(service(name) for name in subjects.SERVICES),
        embedder,
    ]


async def readiness(checks: list[HealthCheck]) -> ReadyReport:
    results = await asyncio.gather(*(check() for check in checks))
    return ReadyReport(
        status="ok" if all(c.status == "ok" for c in results) else "down",
        components={c.name: c for c in results},
    )
