"""Memory service through the gateway: tiers, limits, quota race, supersede, forget, isolation, oversight."""

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg
import httpx
import pytest

from cairn_contracts import limits
from cairn_devstack.cairn import CairnStack
from conftest import TenantHandle, bearer
from tests.e2e.test_spine import assert_envelope

NewTenant = Callable[[], Awaitable[TenantHandle]]


async def remember(http: httpx.AsyncClient, key: str, **body: Any) -> dict[str, Any]:
    response = await http.post("/api/v1/memory", json=body, headers=bearer(key))
    assert response.status_code == 201, response.text
    data: dict[str, Any] = response.json()["data"]
    return data


async def listed(http: httpx.AsyncClient, key: str, **params: Any) -> dict[str, Any]:
    response = await http.get("/api/v1/memory", params=params, headers=bearer(key))
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


class TestLongTermRoundTrip:
    async def test_write_list_get_supersede_forget(
        self, http: httpx.AsyncClient, tenant: TenantHandle
    ) -> None:
        key = await tenant.agent()
        first = await remember(
            http,
            key,
            text="The user prefers dark mode",
            tags=["ui", "pref"],
            metadata={"from": "chat"},
            confidence=0.9,
        )
        assert first["source"] == "explicit"
        assert first["confidence"] == 0.9
        assert first["embedding_status"] in {"pending", "ready"}
        assert first["superseded_by"] is None
        assert first["recall_count"] == 0
        assert first["project_id"] is None

        page = await listed(http, key)
        assert [m["id"] for m in page["data"]] == [first["id"]]
        assert page["meta"] == {"total_count": 1, "limit": limits.LIST_LIMIT_DEFAULT, "offset": 0}

        got = await http.get(f"/api/v1/memory/{first['id']}", headers=bearer(key))
        assert got.json()["data"]["text"] == "The user prefers dark mode"

        newer = await http.post(
            f"/api/v1/memory/{first['id']}/supersede",
            json={"text": "The user prefers light mode now"},
            headers=bearer(key),
        )
        assert newer.status_code == 201, newer.text
        new_id = newer.json()["data"]["id"]
        assert [m["id"] for m in (await listed(http, key))["data"]] == [new_id]
        everything = await listed(http, key, include_superseded="true")
        by_id = {m["id"]: m for m in everything["data"]}
        assert by_id[first["id"]]["superseded_by"] == new_id
        again = await http.post(
            f"/api/v1/memory/{first['id']}/supersede", json={"text": "x"}, headers=bearer(key)
        )
        assert_envelope(again, 409, "conflict")

        gone = await http.delete(f"/api/v1/memory/{new_id}", headers=bearer(key))
        assert gone.status_code == 200
        assert_envelope(await http.get(f"/api/v1/memory/{new_id}", headers=bearer(key)), 404, "not_found")
        assert_envelope(await http.delete(f"/api/v1/memory/{new_id}", headers=bearer(key)), 404, "not_found")

    async def test_list_filters(self, http: httpx.AsyncClient, tenant: TenantHandle) -> None:
        key = await tenant.agent()
        for i in range(5):
            await remember(http, key, text=f"fact {i}", tags=["even" if i % 2 == 0 else "odd"])
        assert (await listed(http, key, tag="even"))["meta"]["total_count"] == 3
        page = await listed(http, key, limit=2, offset=1)
        assert len(page["data"]) == 2
        assert page["meta"]["total_count"] == 5
        assert [m["text"] for m in (await listed(http, key, source="explicit", limit=100))["data"]][
            0
        ] == "fact 4"
        assert (await listed(http, key, source="promoted"))["meta"]["total_count"] == 0


class TestLimits:
    async def test_text_byte_cap_at_and_past_the_edge(
        self, http: httpx.AsyncClient, tenant: TenantHandle
    ) -> None:
        key = await tenant.agent()
        at_cap = "é" * (limits.MEMORY_TEXT_MAX_BYTES // 2)  # 2 bytes each: exactly the cap
        await remember(http, key, text=at_cap)
        past = await http.post("/api/v1/memory", json={"text": at_cap + "x"}, headers=bearer(key))
        assert_envelope(past, 422, "text_too_long")
        assert (await listed(http, key))["meta"]["total_count"] == 1

    @pytest.mark.parametrize(
        "body", [{}, {"text": ""}, {"text": "   "}, {"text": 5}, {"text": "x", "confidence": 2}]
    )
    async def test_bad_long_term_bodies_are_422(
        self, http: httpx.AsyncClient, tenant: TenantHandle, body: dict[str, Any]
    ) -> None:
        key = await tenant.agent()
        response = await http.post("/api/v1/memory", json=body, headers=bearer(key))
        assert_envelope(response, 422, "validation_error")
        assert (await listed(http, key))["meta"]["total_count"] == 0

    async def test_tag_limits(self, http: httpx.AsyncClient, tenant: TenantHandle) -> None:
        key = await tenant.agent()
        await remember(http, key, text="many tags", tags=[f"t{i}" for i in range(limits.TAGS_MAX)])
        too_many = await http.post(
            "/api/v1/memory", json={"text": "x", "tags": [f"t{i}" for i in range(33)]}, headers=bearer(key)
        )
        assert_envelope(too_many, 422, "validation_error")

    async def test_project_id_validation(
        self, http: httpx.AsyncClient, tenant: TenantHandle, new_tenant: NewTenant
    ) -> None:
        key = await tenant.agent()
        project = (
            await http.post("/api/v1/projects", json={"name": "P", "slug": "p"}, headers=bearer(key))
        ).json()
        in_project = await remember(http, key, text="scoped to project", project_id=project["data"]["id"])
        assert in_project["project_id"] == project["data"]["id"]
        assert (await remember(http, key, text="blank is global", project_id="  "))["project_id"] is None
        other = await new_tenant()
        foreign = (
            await http.post(
                "/api/v1/projects", json={"name": "F", "slug": "f"}, headers=bearer(await other.agent())
            )
        ).json()["data"]["id"]
        for bad in ("not-a-uuid", foreign, str(uuid.uuid4())):
            response = await http.post(
                "/api/v1/memory", json={"text": "x", "project_id": bad}, headers=bearer(key)
            )
            assert_envelope(response, 422, "invalid_project_id")
        filtered = await listed(http, key, project_id=project["data"]["id"])
        assert [m["id"] for m in filtered["data"]] == [in_project["id"]]


class TestQuota:
    async def test_concurrent_writers_never_overshoot(
        self, http: httpx.AsyncClient, tenant: TenantHandle, admin_key: str
    ) -> None:
        quota = 25
        patched = await http.patch(
            f"/api/v1/tenants/{tenant.id}", json={"memory_quota": quota}, headers=bearer(admin_key)
        )
        assert patched.status_code == 200
        key = await tenant.agent()
        for i in range(quota - 5):
            await remember(http, key, text=f"seed {i}")
        responses = await asyncio.gather(
            *(
                http.post("/api/v1/memory", json={"text": f"racer {i}"}, headers=bearer(key))
                for i in range(50)
            )
        )
        codes = [r.status_code for r in responses]
        assert codes.count(201) == 5, codes
        assert codes.count(422) == 45
        assert {r.json()["error"]["code"] for r in responses if r.status_code == 422} == {"quota_exceeded"}
        assert (await listed(http, key))["meta"]["total_count"] == quota

    async def test_supersede_at_quota_still_works(
        self, http: httpx.AsyncClient, tenant: TenantHandle, admin_key: str
    ) -> None:
        await http.patch(f"/api/v1/tenants/{tenant.id}", json={"memory_quota": 1}, headers=bearer(admin_key))
        key = await tenant.agent()
        only = await remember(http, key, text="the only one")
        assert_envelope(
            await http.post("/api/v1/memory", json={"text": "two"}, headers=bearer(key)),
            422,
            "quota_exceeded",
        )
        newer = await http.post(
            f"/api/v1/memory/{only['id']}/supersede", json={"text": "replaced"}, headers=bearer(key)
        )
        assert newer.status_code == 201


class TestSessionTier:
    async def test_concurrent_turns_come_back_in_one_total_order(
        self, http: httpx.AsyncClient, tenant: TenantHandle
    ) -> None:
        key = await tenant.agent()
        session_id = f"s-{uuid.uuid4()}"
        sem = asyncio.Semaphore(50)

        async def turn(i: int) -> int:
            async with sem:
                r = await http.post(
                    "/api/v1/memory",
                    json={
                        "tier": "session",
                        "session_id": session_id,
                        "role": "user",
                        "content": f"turn {i}",
                        "ttl_seconds": 600,
                    },
                    headers=bearer(key),
                )
                assert r.status_code == 201, r.text
                seq: int = r.json()["data"]["seq"]
                return seq

        seqs = await asyncio.gather(*(turn(i) for i in range(1000)))
        history = await http.get(
            f"/api/v1/sessions/{session_id}/history", params={"limit": 1000}, headers=bearer(key)
        )
        body = history.json()
        assert body["meta"]["total_count"] == 1000
        returned = [t["seq"] for t in body["data"]]
        assert returned == sorted(seqs)
        assert len(set(returned)) == 1000

    async def test_content_cap_at_and_past_the_edge(
        self, http: httpx.AsyncClient, tenant: TenantHandle
    ) -> None:
        key = await tenant.agent()
        base = {"tier": "session", "session_id": "cap", "role": "assistant", "ttl_seconds": 60}
        ok = await http.post(
            "/api/v1/memory",
            json={**base, "content": "a" * limits.SESSION_CONTENT_MAX_BYTES},
            headers=bearer(key),
        )
        assert ok.status_code == 201, ok.text
        past = await http.post(
            "/api/v1/memory",
            json={**base, "content": "a" * (limits.SESSION_CONTENT_MAX_BYTES + 1)},
            headers=bearer(key),
        )
        assert_envelope(past, 422, "content_too_large")
        history = await http.get("/api/v1/sessions/cap/history", headers=bearer(key))
        assert history.json()["meta"]["total_count"] == 1

    async def test_session_id_limits(self, http: httpx.AsyncClient, tenant: TenantHandle) -> None:
        key = await tenant.agent()
        base = {"tier": "session", "role": "fact", "content": "c", "ttl_seconds": 60}
        ok = await http.post(
            "/api/v1/memory",
            json={**base, "session_id": "s" * limits.SESSION_ID_MAX_BYTES},
            headers=bearer(key),
        )
        assert ok.status_code == 201
        for bad in ("s" * (limits.SESSION_ID_MAX_BYTES + 1), "", "  ", 7):
            r = await http.post("/api/v1/memory", json={**base, "session_id": bad}, headers=bearer(key))
            assert_envelope(r, 422, "invalid_session_id")

    async def test_bad_roles_and_expiry(self, http: httpx.AsyncClient, tenant: TenantHandle) -> None:
        key = await tenant.agent()
        base = {"tier": "session", "session_id": "e", "content": "c"}
        assert_envelope(
            await http.post("/api/v1/memory", json={**base, "role": "robot"}, headers=bearer(key)),
            422,
            "validation_error",
        )
        both = {**base, "role": "user", "ttl_seconds": 5, "expires_at": "2099-01-01T00:00:00Z"}
        assert_envelope(
            await http.post("/api/v1/memory", json=both, headers=bearer(key)), 422, "invalid_expiry"
        )
        past = {**base, "role": "user", "expires_at": "2001-01-01T00:00:00Z"}
        assert_envelope(
            await http.post("/api/v1/memory", json=past, headers=bearer(key)), 422, "invalid_expiry"
        )
        default = await http.post("/api/v1/memory", json={**base, "role": "user"}, headers=bearer(key))
        assert default.status_code == 201  # the configured default TTL applies

    async def test_expired_turns_are_never_returned_and_get_pruned(
        self, http: httpx.AsyncClient, tenant: TenantHandle, stack: CairnStack
    ) -> None:
        key = await tenant.agent()
        sid = f"exp-{uuid.uuid4()}"
        for ttl, content in ((1, "short-lived"), (600, "long-lived")):
            r = await http.post(
                "/api/v1/memory",
                json={
                    "tier": "session",
                    "session_id": sid,
                    "role": "user",
                    "content": content,
                    "ttl_seconds": ttl,
                },
                headers=bearer(key),
            )
            assert r.status_code == 201
        await asyncio.sleep(1.2)
        history = (await http.get(f"/api/v1/sessions/{sid}/history", headers=bearer(key))).json()
        assert [t["content"] for t in history["data"]] == ["long-lived"]
        conn = await asyncpg.connect(stack.database_url)
        try:
            for _ in range(50):
                rows = await conn.fetchval("SELECT count(*) FROM session_memories WHERE session_id = $1", sid)
                if rows == 1:
                    break
                await asyncio.sleep(0.2)
            assert rows == 1  # the prune loop deleted the expired row
        finally:
            await conn.close()

    async def test_another_subject_sees_nothing_of_the_session(
        self, http: httpx.AsyncClient, tenant: TenantHandle
    ) -> None:
        mine, theirs = await tenant.agent(), await tenant.agent()
        await http.post(
            "/api/v1/memory",
            json={
                "tier": "session",
                "session_id": "shared-name",
                "role": "user",
                "content": "private turn",
                "ttl_seconds": 60,
            },
            headers=bearer(mine),
        )
        other = (await http.get("/api/v1/sessions/shared-name/history", headers=bearer(theirs))).json()
        assert other["data"] == []
        assert other["meta"]["total_count"] == 0


class TestIsolation:
    async def test_other_subjects_and_tenants_get_404_and_never_list_it(
        self, http: httpx.AsyncClient, tenant: TenantHandle, new_tenant: NewTenant
    ) -> None:
        owner = await tenant.agent("owner")
        memory = await remember(http, owner, text="owner's secret plan")
        other_tenant = await new_tenant()
        intruders = [
            await tenant.agent("intruder"),
            await tenant.key("user"),
            await other_tenant.agent("owner"),
        ]
        for intruder in intruders:
            for response in (
                await http.get(f"/api/v1/memory/{memory['id']}", headers=bearer(intruder)),
                await http.delete(f"/api/v1/memory/{memory['id']}", headers=bearer(intruder)),
                await http.post(
                    f"/api/v1/memory/{memory['id']}/supersede",
                    json={"text": "hijack"},
                    headers=bearer(intruder),
                ),
            ):
                assert_envelope(response, 404, "not_found")
            page = await listed(http, intruder, all_subjects="true", include_superseded="true", limit=100)
            assert memory["id"] not in {m["id"] for m in page["data"]}
        assert (await http.get(f"/api/v1/memory/{memory['id']}", headers=bearer(owner))).json()["data"][
            "text"
        ] == ("owner's secret plan")

    async def test_unknown_and_malformed_ids_are_404(
        self, http: httpx.AsyncClient, tenant: TenantHandle
    ) -> None:
        key = await tenant.agent()
        for bad in (str(uuid.uuid4()), "not-a-uuid"):
            assert_envelope(await http.get(f"/api/v1/memory/{bad}", headers=bearer(key)), 404, "not_found")


class TestOversight:
    async def test_superadmin_lists_every_subject_and_deletes_any(
        self, http: httpx.AsyncClient, tenant: TenantHandle, new_tenant: NewTenant, admin_key: str
    ) -> None:
        a, b = await tenant.agent("a"), await tenant.agent("b")
        ma = await remember(http, a, text="from a")
        await remember(http, b, text="from b")
        other = await new_tenant()
        await remember(http, await other.agent(), text="other tenant")
        as_admin = bearer(admin_key, **{"X-Impersonate-Tenant": tenant.id})
        page = (await http.get("/api/v1/memory", params={"all_subjects": "true"}, headers=as_admin)).json()
        assert sorted(m["text"] for m in page["data"]) == ["from a", "from b"]
        assert {m["subject_id"] for m in page["data"]} == {"a", "b"}
        deleted = await http.delete(f"/api/v1/memory/{ma['id']}", headers=as_admin)
        assert deleted.status_code == 200
        assert [m["text"] for m in (await listed(http, a))["data"]] == []

    async def test_all_subjects_is_ignored_for_other_roles(
        self, http: httpx.AsyncClient, tenant: TenantHandle
    ) -> None:
        a, user = await tenant.agent("a"), await tenant.key("user")
        await remember(http, a, text="from a")
        assert (await listed(http, user, all_subjects="true"))["data"] == []


async def _fetch_rows(database_url: str, ids: list[str]) -> list[asyncpg.Record]:
    conn = await asyncpg.connect(database_url)
    try:
        return list(
            await conn.fetch(
                "SELECT id::text, embedding::text AS embedding, embedding_content_hash FROM memories WHERE id = ANY($1::uuid[])",
                ids,
            )
        )
    finally:
        await conn.close()
