"""Every process's own HTTP port on the real stack: /healthz, /readyz (its own dependencies), /metrics."""

import httpx
import pytest

from cairn_devstack.cairn import SERVICES, CairnStack

# What each process's /readyz checks besides NATS (its own dependencies, nothing else).
OWN_DEPENDENCIES = {
    "memory": {"nats", "postgres"},
    "memory-embedder": {"nats", "postgres", "consumer"},
    "recall": {"nats", "postgres"},
    "promotion": {"nats", "postgres", "temporal"},
    "graduation": {"nats", "postgres", "temporal", "worker"},
    "knowledge": {"nats", "postgres"},
}


def test_every_service_process_has_a_port() -> None:
    assert set(OWN_DEPENDENCIES) == {name for name, _ in SERVICES}


@pytest.mark.parametrize("name", ["gateway", *OWN_DEPENDENCIES])
async def test_healthz_readyz_and_metrics_answer(stack: CairnStack, name: str) -> None:
    await stack.wait_ready()
    async with httpx.AsyncClient(base_url=stack.http_url(name), timeout=10) as client:
        assert (await client.get("/healthz")).status_code == 200
        ready = await client.get("/readyz")
        assert ready.status_code == 200, ready.text
        metrics = await client.get("/metrics")
    assert metrics.status_code == 200
    assert metrics.headers["content-type"].startswith("text/plain")
    if name != "gateway":
        components = {c["name"]: c["status"] for c in ready.json()["components"]}
        assert components == dict.fromkeys(OWN_DEPENDENCIES[name], "ok")
        # The default registry: the process collector is always there.
        assert "process_cpu_seconds_total" in metrics.text
    else:
        assert "cairn_http_requests_total" in metrics.text


def test_http_urls_name_every_process(stack: CairnStack) -> None:
    urls = stack.http_urls()
    assert set(urls) == {
        "CAIRN_GATEWAY_HTTP_URL",
        *(f"CAIRN_{name.upper().replace('-', '_')}_HTTP_URL" for name in OWN_DEPENDENCIES),
    }
    assert len(set(urls.values())) == len(urls)  # one port each


async def test_gateway_readyz_includes_the_embedding_worker(stack: CairnStack) -> None:
    async with httpx.AsyncClient(base_url=stack.gateway_url, timeout=10) as client:
        await stack.wait_ready()
        assert (await client.get("/readyz")).json()["components"]["memory-embedder"]["status"] == "ok"
        await stack.supervisor.stop("memory-embedder")
        try:
            response = await client.get("/readyz")
            assert response.status_code == 503
            components = response.json()["components"]
            assert components["memory-embedder"]["status"] == "down"
            assert components["memory"]["status"] == "ok"
        finally:
            await stack.start_service("memory-embedder", "cairn_memory.embedder")
        await stack.wait_ready(timeout=60)
