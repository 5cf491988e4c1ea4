"""Per-tenant usage metering: what a tenant did shows up in `GET /api/v1/tenants/{id}/usage`, for the
superadmin and the tenant's own user key only."""

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

from cairn_contracts import limits
from cairn_devstack.cairn import CairnStack
from cairn_promotion.workflows import PromoteSession
from cairn_storage.usage import estimate_tokens
from conftest import TenantHandle, bearer
from tests.bus_helpers import temporal_client
from tests.e2e.test_knowledge import propose
from tests.e2e.test_memory import remember
from tests.e2e.test_promotion import FACT_TURNS, add_turns, promote, promoted_rows
from tests.e2e.test_recall import wait_embedded

NewTenant = Callable[[], Awaitable[TenantHandle]]


def today() -> str:
    return datetime.now(UTC).date().isoformat()


async def usage(http: httpx.AsyncClient, key: str, tenant_id: str, **params: str) -> httpx.Response:
    return await http.get(f"/api/v1/tenants/{tenant_id}/usage", params=params, headers=bearer(key))


async def usage_until(
    http: httpx.AsyncClient, key: str, tenant_id: str, done: Callable[[dict[str, Any]], bool]
) -> dict[str, Any]:
    """Poll until the totals satisfy `done` (counters are flushed every 0.5 s in tests)."""
    totals: dict[str, Any] = {}
    for _ in range(150):
        response = await usage(http, key, tenant_id)
        assert response.status_code == 200, response.text
        totals = response.json()["data"]["totals"]
        if done(totals):
            return dict(response.json()["data"])
        await asyncio.sleep(0.2)
    raise AssertionError(f"usage never matched: {totals}")


class TestUsageCounts:
    async def test_counts_match_what_the_tenant_did(
        self, http: httpx.AsyncClient, tenant: TenantHandle
    ) -> None:
        agent = await tenant.agent()
        user = await tenant.key("user")
        texts = [f"usage fact {i} {uuid.uuid4().hex}" for i in range(3)]
        written = [await remember(http, agent, text=t) for t in texts]
        turns = ["héllo wörld", "a second turn"]
        for content in turns:
            r = await http.post(
                "/api/v1/memory",
                json={
                    "tier": "session",
                    "session_id": "s1",
                    "role": "user",
                    "content": content,
                    "ttl_seconds": 600,
                },
                headers=bearer(agent),
            )
            assert r.status_code == 201, r.text
        await wait_embedded(http, agent, 3)
        queries = [f"usage query {uuid.uuid4().hex}", f"merged query {uuid.uuid4().hex}"]
        assert (
            await http.post("/api/v1/memory/recall", json={"query": queries[0]}, headers=bearer(agent))
        ).is_success
        assert (
            await http.post("/api/v1/recall", json={"query": queries[1]}, headers=bearer(agent))
        ).is_success

        expected_tokens = estimate_tokens(texts) + estimate_tokens(queries)
        data = await usage_until(
            http,
            user,
            tenant.id,
            # Each service flushes its own counters, so every counter asserted below is waited for.
            lambda t: (
                t["writes"] == 3
                and t["session_bytes"] > 0
                and t["recalls"] == 2
                and t["live_rows"] == 3
                and t["embedded_tokens"] >= expected_tokens
            ),
        )
        totals = data["totals"]
        assert totals["writes"] == 3
        assert totals["session_bytes"] == sum(len(c.encode()) for c in turns)
        assert totals["recalls"] == 2
        assert totals["compile_calls"] == 0
        # A row the sweep and the event path both embedded (a slow event under load) is billed twice: the
        # tokens were spent twice. Never less than the texts and queries embedded.
        assert expected_tokens <= totals["embedded_tokens"] <= expected_tokens + estimate_tokens(texts)
        assert [d["day"] for d in data["days"]] == [today()]
        assert data["days"][0]["writes"] == 3
        assert data["from"] <= today() == data["to"]

        # The live-row figure is a snapshot: forgetting a memory lowers it.
        assert (
            await http.delete(f"/api/v1/memory/{written[0]['id']}", headers=bearer(agent))
        ).status_code == 200
        after = await usage_until(http, user, tenant.id, lambda t: t["live_rows"] == 2)
        assert after["totals"]["writes"] == 3

    async def test_promotion_meters_compiles_and_promoted_writes(
        self, http: httpx.AsyncClient, tenant: TenantHandle, stack: CairnStack
    ) -> None:
        agent = await tenant.agent()
        await add_turns(http, agent, "promo", FACT_TURNS)
        accepted = await promote(http, agent, "promo")
        temporal = await temporal_client(stack)
        result = await temporal.get_workflow_handle_for(PromoteSession.run, accepted["workflow_id"]).result()
        assert result.promoted >= 1
        inserted = len(await promoted_rows(http, agent))
        data = await usage_until(
            http, tenant.admin_key, tenant.id, lambda t: t["compile_calls"] == 1 and t["writes"] == inserted
        )
        assert data["totals"]["session_bytes"] == sum(len(c.encode()) for _, c in FACT_TURNS)
        assert data["totals"]["embedded_tokens"] > 0  # promoted candidates are embedded at write time

    async def test_knowledge_proposals_and_searches_meter_embedded_tokens(
        self, http: httpx.AsyncClient, tenant: TenantHandle
    ) -> None:
        agent = await tenant.agent()
        body = f"Deploys to production need two approvals {uuid.uuid4().hex}."
        await propose(http, agent, title=f"Deploy approvals {uuid.uuid4().hex[:6]}", body=body)
        query = f"how many approvals {uuid.uuid4().hex}"
        r = await http.post("/api/v1/knowledge/search", json={"query": query}, headers=bearer(agent))
        assert r.status_code == 200, r.text
        # The gate embeds title + body as chunks; at least the body's and the query's estimate.
        data = await usage_until(
            http,
            tenant.admin_key,
            tenant.id,
            lambda t: t["embedded_tokens"] >= estimate_tokens([body]) + estimate_tokens([query]),
        )
        assert data["totals"]["writes"] == 0  # articles are knowledge, not memory writes
        assert data["totals"]["recalls"] == 0  # a knowledge search is not a memory recall


class TestUsageAccess:
    async def test_another_tenants_usage_is_404_for_every_tenant_key(
        self, http: httpx.AsyncClient, new_tenant: NewTenant
    ) -> None:
        mine, theirs = await new_tenant(), await new_tenant()
        for role in ("user", "orchestrator", "agent"):
            key = await mine.key(role, agent_id="a1" if role == "agent" else None)
            response = await usage(http, key, theirs.id)
            assert response.status_code == 404, response.text
            assert response.json()["error"]["code"] == "not_found"
        missing = await usage(http, await mine.key("user"), str(uuid.uuid4()))
        assert missing.status_code == 404

    async def test_superadmin_and_own_user_key_read_it_agents_do_not(
        self, http: httpx.AsyncClient, tenant: TenantHandle
    ) -> None:
        assert (await usage(http, tenant.admin_key, tenant.id)).status_code == 200
        assert (await usage(http, await tenant.key("user"), tenant.id)).status_code == 200
        assert (await usage(http, await tenant.key("orchestrator"), tenant.id)).status_code == 200
        agent = await usage(http, await tenant.agent(), tenant.id)
        assert agent.status_code == 403
        assert agent.json()["error"]["code"] == "forbidden"
        assert (await usage(http, tenant.admin_key, str(uuid.uuid4()))).status_code == 404
        assert (await usage(http, tenant.admin_key, "not-a-uuid")).status_code == 404
        assert (await http.get(f"/api/v1/tenants/{tenant.id}/usage")).status_code == 401

    async def test_a_new_tenant_has_an_empty_report(
        self, http: httpx.AsyncClient, tenant: TenantHandle
    ) -> None:
        response = await usage(http, tenant.admin_key, tenant.id, **{"from": today(), "to": today()})
        assert response.status_code == 200
        data = response.json()["data"]
        assert data["tenant_id"] == tenant.id
        assert data["totals"]["writes"] == 0
        assert all(d["writes"] == 0 and d["recalls"] == 0 for d in data["days"])


class TestUsageRange:
    async def test_range_limits_at_and_past_the_edge(
        self, http: httpx.AsyncClient, tenant: TenantHandle
    ) -> None:
        end = datetime.now(UTC).date()
        widest = end - timedelta(days=limits.USAGE_RANGE_MAX_DAYS - 1)
        ok = await usage(
            http, tenant.admin_key, tenant.id, **{"from": widest.isoformat(), "to": end.isoformat()}
        )
        assert ok.status_code == 200, ok.text
        too_wide = await usage(
            http,
            tenant.admin_key,
            tenant.id,
            **{"from": (widest - timedelta(days=1)).isoformat(), "to": end.isoformat()},
        )
        assert too_wide.status_code == 422
        assert too_wide.json()["error"]["code"] == "range_too_wide"
        reversed_ = await usage(
            http,
            tenant.admin_key,
            tenant.id,
            **{"from": end.isoformat(), "to": (end - timedelta(days=1)).isoformat()},
        )
        assert reversed_.status_code == 422
        assert reversed_.json()["error"]["code"] == "invalid_range"
        one_day = await usage(
            http, tenant.admin_key, tenant.id, **{"from": end.isoformat(), "to": end.isoformat()}
        )
        assert one_day.status_code == 200

    async def test_malformed_dates_are_422(self, http: httpx.AsyncClient, tenant: TenantHandle) -> None:
        for params in ({"from": "yesterday"}, {"to": "2026-13-01"}, {"from": "2026-02-30"}):
            response = await usage(http, tenant.admin_key, tenant.id, **params)
            assert response.status_code == 422, params
            assert response.json()["error"]["status"] == 422
