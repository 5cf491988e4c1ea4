"""The audit trail: who minted a key for which agent_id, revocations, superadmin impersonation; listable
by a superadmin only, paged; append-only in PostgreSQL itself."""

from typing import Any

import asyncpg
import httpx
import pytest

from cairn_devstack.cairn import CairnStack
from conftest import TenantHandle, bearer
from tests.e2e.test_spine import assert_envelope


async def events(http: httpx.AsyncClient, admin_key: str, **params: Any) -> dict[str, Any]:
    response = await http.get("/api/v1/audit-events", params=params, headers=bearer(admin_key))
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def whoami(http: httpx.AsyncClient, key: str) -> dict[str, Any]:
    data: dict[str, Any] = (await http.get("/api/v1/whoami", headers=bearer(key))).json()["data"]
    return data


class TestAuditTrail:
    async def test_key_minting_revocation_and_impersonation_are_recorded(
        self, http: httpx.AsyncClient, tenant: TenantHandle, admin_key: str
    ) -> None:
        user_key = await tenant.key("user")
        user = await whoami(http, user_key)
        admin = await whoami(http, admin_key)
        # A tenant's user key mints a key for one of its agents (and so can read that agent's memory).
        minted = await http.post(
            "/api/v1/keys", json={"role": "agent", "agent_id": "planner"}, headers=bearer(user_key)
        )
        assert minted.status_code == 201, minted.text
        agent_key_id = minted.json()["data"]["id"]
        revoked = await http.delete(f"/api/v1/keys/{agent_key_id}", headers=bearer(user_key))
        assert revoked.status_code == 200, revoked.text
        oversight = await http.get(
            "/api/v1/memory",
            params={"all_subjects": "true"},
            headers=bearer(admin_key, **{"X-Impersonate-Tenant": tenant.id}),
        )
        assert oversight.status_code == 200, oversight.text

        trail = (await events(http, admin_key, tenant_id=tenant.id, limit=100))["data"]
        by_action = {(e["action"], e["target_agent_id"]): e for e in trail}
        created_user = by_action[("key_created", None)]
        assert created_user["actor_key_id"] == admin["key_id"]  # the fixture's superadmin minted the user key
        assert created_user["target_role"] == "user"
        created = by_action[("key_created", "planner")]
        assert created["actor_key_id"] == user["key_id"]
        assert created["actor_role"] == "user"
        assert created["actor_tenant_id"] == tenant.id
        assert created["target_key_id"] == agent_key_id
        assert created["target_role"] == "agent"
        gone = by_action[("key_revoked", "planner")]
        assert gone["actor_key_id"] == user["key_id"]
        assert gone["target_key_id"] == agent_key_id
        impersonated = by_action[("impersonation", None)]
        assert impersonated["actor_key_id"] == admin["key_id"]
        assert impersonated["actor_role"] == "superadmin"
        assert impersonated["detail"] == {"method": "GET", "path": "/api/v1/memory"}
        assert [e["id"] for e in trail] == sorted((e["id"] for e in trail), reverse=True)  # newest first

    async def test_paging_and_filters(
        self, http: httpx.AsyncClient, tenant: TenantHandle, admin_key: str
    ) -> None:
        for i in range(3):
            await tenant.agent(f"a{i}")
        page = await events(http, admin_key, tenant_id=tenant.id, action="key_created", limit=2)
        assert page["meta"] == {"total_count": 3, "limit": 2, "offset": 0}
        rest = await events(http, admin_key, tenant_id=tenant.id, action="key_created", limit=2, offset=2)
        names = [e["target_agent_id"] for e in page["data"] + rest["data"]]
        assert names == ["a2", "a1", "a0"]
        assert (await events(http, admin_key, tenant_id="not-a-uuid"))["data"] == []
        for bad in ({"limit": 0}, {"limit": 101}, {"offset": -1}, {"action": "nope"}):
            response = await http.get("/api/v1/audit-events", params=bad, headers=bearer(admin_key))
            assert_envelope(response, 422, "validation_error")

    async def test_only_a_superadmin_lists_it(self, http: httpx.AsyncClient, tenant: TenantHandle) -> None:
        for role in ("agent", "user", "orchestrator"):
            key = await tenant.key(role, "x" if role == "agent" else None)
            assert_envelope(await http.get("/api/v1/audit-events", headers=bearer(key)), 403, "forbidden")
        assert_envelope(await http.get("/api/v1/audit-events"), 401, "unauthenticated")

    @pytest.mark.parametrize(
        "statement",
        ["UPDATE audit_events SET action = 'x'", "DELETE FROM audit_events", "TRUNCATE audit_events"],
    )
    async def test_append_only_in_the_database(
        self, stack: CairnStack, tenant: TenantHandle, admin_key: str, statement: str
    ) -> None:
        await tenant.agent()  # at least one row exists
        conn = await asyncpg.connect(stack.database_url)
        try:
            before = await conn.fetchval("SELECT count(*) FROM audit_events")
            with pytest.raises(asyncpg.InsufficientPrivilegeError, match="append-only"):
                await conn.execute(statement)
            assert await conn.fetchval("SELECT count(*) FROM audit_events") == before
        finally:
            await conn.close()
