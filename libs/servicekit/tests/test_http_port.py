"""The HTTP port's contract, on a real aiohttp server: readiness follows the checks, /metrics is the
default prometheus_client registry (other modules register there and rely on it being served)."""

import uuid

import httpx
from prometheus_client import Counter

from cairn_contracts.health import ComponentHealth
from cairn_servicekit.health import HealthCheck, probe
from cairn_servicekit.http_port import HttpPort


def fixed(name: str, status: str) -> HealthCheck:
    async def check() -> ComponentHealth:
        return ComponentHealth(name=name, status="ok" if status == "ok" else "down", detail=None)

    return check


async def test_port_zero_binds_a_free_port_and_readiness_follows_the_checks() -> None:
    port = HttpPort("unit", "127.0.0.1", 0)
    bound = await port.start()
    try:
        assert bound > 0
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{bound}") as client:
            assert (await client.get("/healthz")).json() == {"status": "ok", "service": "unit"}

            starting = await client.get("/readyz")
            assert starting.status_code == 503
            assert starting.json()["components"][0]["detail"] == "starting"

            port.ready_when([fixed("postgres", "ok"), fixed("nats", "down")])
            down = await client.get("/readyz")
            assert down.status_code == 503
            assert {c["name"]: c["status"] for c in down.json()["components"]} == {
                "postgres": "ok",
                "nats": "down",
            }

            port.ready_when([fixed("postgres", "ok"), fixed("nats", "ok")])
            assert (await client.get("/readyz")).status_code == 200

            port.stopping()
            stopping = await client.get("/readyz")
            assert stopping.status_code == 503
            assert stopping.json()["components"][0]["detail"] == "stopping"
    finally:
        await port.stop()


async def test_a_raising_check_is_down_with_its_error() -> None:
    async def broken() -> None:
        raise ConnectionRefusedError("connection refused")

    port = HttpPort("unit", "127.0.0.1", 0)
    bound = await port.start()
    try:
        port.ready_when([probe("postgres", broken)])
        async with httpx.AsyncClient() as client:
            response = await client.get(f"http://127.0.0.1:{bound}/readyz")
        assert response.status_code == 503
        (component,) = response.json()["components"]
        assert component["status"] == "down"
        assert "connection refused" in component["detail"]
    finally:
        await port.stop()


async def test_metrics_serve_what_any_module_registers_in_the_default_registry() -> None:
    name = f"cairn_unit_{uuid.uuid4().hex[:8]}"
    counter = Counter(name, "registered the ordinary way, without registry=")
    counter.inc(3)
    port = HttpPort("unit", "127.0.0.1", 0)
    bound = await port.start()
    try:
        async with httpx.AsyncClient() as client:
            response = await client.get(f"http://127.0.0.1:{bound}/metrics")
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/plain")
        assert f"{name}_total 3.0" in response.text
    finally:
        await port.stop()
