"""The spine through the gateway: health, readiness, the error envelope, OpenAPI, metrics."""

import asyncio

import httpx

from cairn_contracts import subjects
from cairn_devstack.cairn import CairnStack
from conftest import TenantHandle, bearer


def assert_envelope(response: httpx.Response, status: int, code: str) -> None:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"}
    assert body["error"]["code"] == code
    assert body["error"]["status"] == status
    assert body["error"]["message"]


class TestHealth:
    async def test_healthz_is_alive(self, http: httpx.AsyncClient) -> None:
        response = await http.get("/healthz")
        assert response.status_code == 200
        assert response.json() == {"status": "ok"}

    async def test_readyz_lists_every_component_ok(self, http: httpx.AsyncClient) -> None:
        response = await http.get("/readyz")
        assert response.status_code == 200, response.text
        components = response.json()["components"]
        expected = {
            "postgres",
            "nats",
            "temporal",
            "memory",
            "recall",
            "promotion",
            "graduation",
            "knowledge",
            "memory-embedder",
        }
        assert set(components) == expected
        assert all(c["status"] == "ok" for c in components.values())

    async def test_metrics_are_prometheus_text(self, http: httpx.AsyncClient) -> None:
        await http.get("/healthz")
        response = await http.get("/metrics")
        assert response.status_code == 200
        assert "cairn_http_requests_total" in response.text


class TestErrorEnvelope:
    async def test_unknown_route_is_404_in_envelope(self, http: httpx.AsyncClient) -> None:
        assert_envelope(await http.get("/nope"), 404, "not_found")

    async def test_wrong_method_is_405_in_envelope(self, http: httpx.AsyncClient) -> None:
        assert_envelope(await http.put("/healthz"), 405, "method_not_allowed")

    async def test_malformed_json_is_422_with_code(self, http: httpx.AsyncClient, admin_key: str) -> None:
        response = await http.post(
            "/api/v1/tenants",
            content=b"{not json",
            headers={"Authorization": f"Bearer {admin_key}", "Content-Type": "application/json"},
        )
        assert_envelope(response, 422, "invalid_json")

    async def test_validation_error_is_422_with_code(self, http: httpx.AsyncClient, admin_key: str) -> None:
        response = await http.post(
            "/api/v1/tenants", json={"name": ""}, headers={"Authorization": f"Bearer {admin_key}"}
        )
        assert_envelope(response, 422, "validation_error")


class TestOpenApi:
    async def test_openapi_documents_the_api(self, http: httpx.AsyncClient) -> None:
        response = await http.get("/openapi.json")
        assert response.status_code == 200
        paths = response.json()["paths"]
        for path in ("/api/v1/memory", "/api/v1/whoami", "/api/v1/projects/resolve", "/readyz"):
            assert path in paths


class TestReadinessTracksComponents:
    async def test_readyz_turns_503_naming_a_stopped_service_then_recovers(
        self, http: httpx.AsyncClient, stack: CairnStack
    ) -> None:
        await stack.supervisor.stop("recall")
        try:
            response = await http.get("/readyz")
            assert response.status_code == 503
            components = response.json()["components"]
            assert components["recall"]["status"] == "down"
            assert components["memory"]["status"] == "ok"
        finally:
            await stack.start_service("recall", "cairn_recall")
        await stack.wait_ready(timeout=30)
        assert (await http.get("/readyz")).status_code == 200

    async def test_readyz_turns_503_naming_nats_then_recovers(
        self, http: httpx.AsyncClient, stack: CairnStack
    ) -> None:
        await stack.supervisor.stop("nats")
        try:
            response = await http.get("/readyz")
            assert response.status_code == 503
            assert response.json()["components"]["nats"]["status"] == "down"
            # Each process's own port reports its own dependency down too.
            own = await http.get(stack.http_url("memory") + "/readyz")
            assert own.status_code == 503
            assert {c["name"]: c["status"] for c in own.json()["components"]}["nats"] == "down"
        finally:
            await stack.supervisor.restart("nats")
        await stack.wait_ready(timeout=60)
        assert (await http.get("/readyz")).status_code == 200


async def wait_for_replicas(stack: CairnStack, subject: str, count: int) -> None:
    """Until `count` connections subscribe to `subject` (read from the NATS monitoring endpoint)."""
    url = f"http://127.0.0.1:{stack.config.ports.nats_monitor}/connz?subs=1"
    async with httpx.AsyncClient() as client:
        for _ in range(120):
            conns = (await client.get(url)).json().get("connections", [])
            if sum(subject in (c.get("subscriptions_list") or []) for c in conns) >= count:
                return
            await asyncio.sleep(0.25)
    raise AssertionError(f"fewer than {count} replicas serve {subject}")


class TestGracefulShutdown:
    async def test_sigterm_finishes_in_flight_requests_while_a_replica_takes_over(
        self, http: httpx.AsyncClient, stack: CairnStack, tenant: TenantHandle
    ) -> None:
        key = await tenant.agent()
        await stack.start_service("memory-2", "cairn_memory")  # a second replica in the same queue group
        try:
            await wait_for_replicas(stack, subjects.MEMORY_REMEMBER, 2)

            async def write(i: int) -> int:
                r = await http.post("/api/v1/memory", json={"text": f"drain test {i}"}, headers=bearer(key))
                return r.status_code

            writes = [asyncio.create_task(write(i)) for i in range(150)]
            await asyncio.sleep(0.3)
            await stack.supervisor.stop("memory")  # SIGTERM mid-burst: stop taking, finish in-flight, drain
            codes = await asyncio.gather(*writes)
            assert codes == [201] * 150
            page = await http.get("/api/v1/memory", params={"limit": 1}, headers=bearer(key))
            assert page.json()["meta"]["total_count"] == 150
        finally:
            if not stack.supervisor.is_running("memory"):
                await stack.start_service("memory", "cairn_memory")
            await stack.supervisor.stop("memory-2")
        await stack.wait_ready(timeout=60)
