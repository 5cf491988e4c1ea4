"""Every bound at and just past its edge: per-session turn and byte caps, the read rate limit (its own
bucket, beside the write bucket), projects per tenant. The suite runs with small caps (`TEST_SERVICE_ENV`)."""

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import httpx

from conftest import TEST_SERVICE_ENV, TenantHandle, bearer
from tests.e2e.test_spine import assert_envelope

MAX_TURNS = int(TEST_SERVICE_ENV["CAIRN_SESSION_MAX_TURNS"])
MAX_BYTES = int(TEST_SERVICE_ENV["CAIRN_SESSION_MAX_BYTES"])
MAX_PROJECTS = int(TEST_SERVICE_ENV["CAIRN_MAX_PROJECTS_PER_TENANT"])
TURN_BYTES = 100 * 1024  # the per-turn content cap


async def append(http: httpx.AsyncClient, key: str, session_id: str, content: str) -> httpx.Response:
    return await http.post(
        "/api/v1/memory",
        json={"tier": "session", "session_id": session_id, "role": "user", "content": content},
        headers=bearer(key),
    )


async def history_total(http: httpx.AsyncClient, key: str, session_id: str) -> int:
    response = await http.get(
        f"/api/v1/sessions/{session_id}/history", params={"limit": 1}, headers=bearer(key)
    )
    assert response.status_code == 200, response.text
    return int(response.json()["meta"]["total_count"])


class TestSessionCaps:
    async def test_turn_cap_at_and_past_the_edge(self, http: httpx.AsyncClient, tenant: TenantHandle) -> None:
        key = await tenant.agent()
        gate = asyncio.Semaphore(20)

        async def turn(i: int) -> int:
            async with gate:
                return (await append(http, key, "long", f"turn {i}")).status_code

        assert await asyncio.gather(*(turn(i) for i in range(MAX_TURNS))) == [201] * MAX_TURNS
        assert_envelope(await append(http, key, "long", "one too many"), 422, "session_turn_limit")
        assert await history_total(http, key, "long") == MAX_TURNS  # nothing half-written
        assert (await append(http, key, "another", "still fine")).status_code == 201

    async def test_concurrent_appends_never_overshoot(
        self, http: httpx.AsyncClient, tenant: TenantHandle
    ) -> None:
        key = await tenant.agent()
        filler = MAX_TURNS - 5
        gate = asyncio.Semaphore(20)

        async def turn(i: int) -> int:
            async with gate:
                return (await append(http, key, "race", f"t{i}")).status_code

        assert set(await asyncio.gather(*(turn(i) for i in range(filler)))) == {201}
        codes = await asyncio.gather(*(turn(i) for i in range(20)))  # 20 racers for the last 5 places
        assert sorted(codes) == [201] * 5 + [422] * 15
        assert await history_total(http, key, "race") == MAX_TURNS

    async def test_byte_cap_at_and_past_the_edge(self, http: httpx.AsyncClient, tenant: TenantHandle) -> None:
        key = await tenant.agent()
        full_turns, rest = divmod(MAX_BYTES, TURN_BYTES)
        for _ in range(full_turns):
            assert (await append(http, key, "big", "x" * TURN_BYTES)).status_code == 201
        assert rest > 0
        assert_envelope(await append(http, key, "big", "é" * (rest // 2 + 1)), 422, "session_byte_limit")
        assert (await append(http, key, "big", "x" * rest)).status_code == 201  # exactly at the cap
        assert_envelope(await append(http, key, "big", "x"), 422, "session_byte_limit")
        assert await history_total(http, key, "big") == full_turns + 1
        # Another subject's session of the same name is its own budget.
        assert (await append(http, await tenant.agent(), "big", "x")).status_code == 201


async def patch_tenant(http: httpx.AsyncClient, tenant: TenantHandle, **limits: Any) -> dict[str, Any]:
    response = await http.patch(f"/api/v1/tenants/{tenant.id}", json=limits, headers=bearer(tenant.admin_key))
    assert response.status_code == 200, response.text
    data: dict[str, Any] = response.json()["data"]
    return data


READS: list[tuple[str, dict[str, Any]]] = [
    ("/api/v1/memory/recall", {"query": "anything", "mode": "keyword"}),
    ("/api/v1/knowledge/search", {"query": "anything", "mode": "keyword"}),
    ("/api/v1/recall", {"query": "anything"}),
]


class TestWriteRateLimit:
    async def test_concurrent_takes_of_several_keys_stop_exactly_at_each_burst(
        self, http: httpx.AsyncClient, tenant: TenantHandle
    ) -> None:
        # Takes that arrive together share one statement (a key repeated goes to the next round of it).
        await patch_tenant(http, tenant, rate_limit_per_second=0.01, rate_limit_burst=4)
        keys = [await tenant.agent() for _ in range(3)]
        responses = await asyncio.gather(
            *(
                http.post("/api/v1/memory", json={"text": f"racer {i}"}, headers=bearer(keys[i % 3]))
                for i in range(30)
            )
        )
        for k in range(3):
            codes = [r.status_code for i, r in enumerate(responses) if i % 3 == k]
            assert sorted(codes) == [201] * 4 + [429] * 6, codes
        limited = next(r for r in responses if r.status_code == 429)
        assert_envelope(limited, 429, "rate_limited")
        assert int(limited.headers["Retry-After"]) >= 1


class TestReadRateLimit:
    async def test_read_bucket_at_and_past_its_edge(
        self, http: httpx.AsyncClient, tenant: TenantHandle
    ) -> None:
        data = await patch_tenant(http, tenant, read_rate_limit_per_second=0.01, read_rate_limit_burst=3)
        assert (data["read_rate_limit_per_second"], data["read_rate_limit_burst"]) == (0.01, 3)
        key = await tenant.agent()
        for path, body in READS:  # the burst: one of each read path
            response = await http.post(path, json=body, headers=bearer(key))
            assert response.status_code == 200, response.text
        refused = await http.post(READS[0][0], json=READS[0][1], headers=bearer(key))
        assert_envelope(refused, 429, "rate_limited")
        assert 1 <= int(refused.headers["Retry-After"]) <= 100
        assert "read rate limit" in refused.json()["error"]["message"]
        # Writes have their own bucket: a drained read bucket does not block them.
        write = await http.post("/api/v1/memory", json={"text": "still writable"}, headers=bearer(key))
        assert write.status_code == 201, write.text
        # Another key of the tenant has its own read bucket.
        other = await tenant.agent()
        assert (await http.post(READS[1][0], json=READS[1][1], headers=bearer(other))).status_code == 200

    async def test_a_drained_write_bucket_leaves_reads_alone(
        self, http: httpx.AsyncClient, tenant: TenantHandle
    ) -> None:
        await patch_tenant(http, tenant, rate_limit_per_second=0.01, rate_limit_burst=1)
        key = await tenant.agent()  # minted by the superadmin: the tenant's bucket is not charged
        assert (
            await http.post("/api/v1/memory", json={"text": "one"}, headers=bearer(key))
        ).status_code == 201
        assert_envelope(
            await http.post("/api/v1/memory", json={"text": "two"}, headers=bearer(key)), 429, "rate_limited"
        )
        for path, body in READS:
            assert (await http.post(path, json=body, headers=bearer(key))).status_code == 200

    async def test_tenant_override_is_validated_and_resettable(
        self, http: httpx.AsyncClient, tenant: TenantHandle
    ) -> None:
        for bad in ({"read_rate_limit_per_second": 0}, {"read_rate_limit_burst": 0}):
            response = await http.patch(
                f"/api/v1/tenants/{tenant.id}", json=bad, headers=bearer(tenant.admin_key)
            )
            assert_envelope(response, 422, "validation_error")
        data = await patch_tenant(http, tenant, read_rate_limit_per_second=None, read_rate_limit_burst=None)
        assert data["read_rate_limit_per_second"] is None


class TestProjectCap:
    async def test_projects_per_tenant_at_and_past_the_edge(
        self, http: httpx.AsyncClient, new_tenant: Callable[[], Awaitable[TenantHandle]]
    ) -> None:
        tenant = await new_tenant()
        key = await tenant.key("user")

        async def create(slug: str, as_key: str = key) -> httpx.Response:
            return await http.post(
                "/api/v1/projects", json={"name": slug, "slug": slug}, headers=bearer(as_key)
            )

        codes = await asyncio.gather(
            *(create(f"p{i}") for i in range(MAX_PROJECTS + 5))
        )  # racers at the edge
        assert sorted(r.status_code for r in codes) == [201] * MAX_PROJECTS + [422] * 5
        for refused in (r for r in codes if r.status_code == 422):
            assert_envelope(refused, 422, "project_limit")
        listed = await http.get("/api/v1/projects", headers=bearer(key))
        assert len(listed.json()["data"]) == MAX_PROJECTS
        other = await new_tenant()
        assert (await create("p0", await other.key("user"))).status_code == 201
