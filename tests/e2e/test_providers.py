"""Bring your own key: a tenant's own OpenAI-compatible embedding and compiler endpoints, per tenant."""

import asyncio
import hashlib
import json
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable

import asyncpg
import httpx
import numpy as np
import pytest
from aiohttp import web
from temporalio.client import Client, WorkflowFailureError

from cairn_devstack import free_port
from cairn_devstack.cairn import CairnStack
from cairn_promotion.worker import SWEEP_SCHEDULE_ID
from cairn_promotion.workflows import PromoteSession
from conftest import TenantHandle, bearer
from tests.e2e.test_memory import remember
from tests.e2e.test_promotion import FACT_TURNS, add_turns, promote, promoted_rows, temporal  # noqa: F401
from tests.e2e.test_spine import assert_envelope

NewTenant = Callable[[], Awaitable[TenantHandle]]
KEY = "tenant-own-provider-key"


def fake_vector(text: str) -> list[float]:
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
    vector = np.random.default_rng(seed).normal(size=384)
    return list(vector / np.linalg.norm(vector))


class FakeProvider:
    """An OpenAI-compatible server (embeddings + chat) that records the keys and inputs it is sent."""

    def __init__(self) -> None:
        self.embedded: list[str] = []
        self.chat_calls = 0
        self.auth: set[str] = set()

    async def embeddings(self, request: web.Request) -> web.Response:
        self.auth.add(request.headers.get("Authorization", ""))
        body = await request.json()
        self.embedded.extend(body["input"])
        data = [{"index": i, "embedding": fake_vector(t)} for i, t in enumerate(body["input"])]
        return web.json_response({"data": data, "model": body["model"]})

    async def chat(self, request: web.Request) -> web.Response:
        self.auth.add(request.headers.get("Authorization", ""))
        self.chat_calls += 1
        content = json.dumps(
            {
                "candidates": [
                    {
                        "text": "The tenant's own compiler says the deploy window is Thursday",
                        "confidence": 0.9,
                        "tags": [],
                        "cross_links": [],
                    }
                ]
            }
        )
        return web.json_response({"choices": [{"message": {"role": "assistant", "content": content}}]})


@pytest.fixture
async def provider() -> AsyncIterator[tuple[FakeProvider, str]]:
    fake = FakeProvider()
    app = web.Application()
    app.router.add_post("/v1/embeddings", fake.embeddings)
    app.router.add_post("/v1/chat/completions", fake.chat)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        yield fake, f"http://127.0.0.1:{port}/v1"
    finally:
        await runner.cleanup()


async def embedding_models(database_url: str, tenant_id: str) -> set[str]:
    conn = await asyncpg.connect(database_url)
    try:
        for _ in range(100):
            rows = await conn.fetch(
                "SELECT embedding_model FROM memories WHERE tenant_id = $1", uuid.UUID(tenant_id)
            )
            if rows and all(r["embedding_model"] for r in rows):
                return {r["embedding_model"] for r in rows}
            await asyncio.sleep(0.1)
    finally:
        await conn.close()
    raise AssertionError("not embedded")


async def set_providers(
    http: httpx.AsyncClient, admin_key: str, tenant_id: str, body: dict[str, object]
) -> None:
    r = await http.put(f"/api/v1/tenants/{tenant_id}/providers", json=body, headers=bearer(admin_key))
    assert r.status_code == 200, r.text
    assert KEY not in r.text


@pytest.fixture
async def sweep_paused(temporal: Client) -> AsyncIterator[None]:  # noqa: F811
    """Only the test's own triggers compile its sessions: the shared stack's promotion sweep fires every ten
    minutes and would otherwise pick an unpromoted session up between two triggers (the second then says
    "running")."""
    sweep = temporal.get_schedule_handle(SWEEP_SCHEDULE_ID)
    await sweep.pause(note="paused by a test that triggers promotion itself")
    try:
        yield
    finally:
        await sweep.unpause(note="test done")


class TestTenantProviders:
    async def test_settings_are_superadmin_only_and_never_show_the_key(
        self, http: httpx.AsyncClient, tenant: TenantHandle, admin_key: str
    ) -> None:
        body = {"embedding": {"base_url": "https://llm.example/v1", "model": "m", "api_key": KEY}}
        agent = await tenant.agent()
        assert_envelope(
            await http.put(f"/api/v1/tenants/{tenant.id}/providers", json=body, headers=bearer(agent)),
            403,
            "forbidden",
        )
        await set_providers(http, admin_key, tenant.id, body)
        shown = await http.get(f"/api/v1/tenants/{tenant.id}/providers", headers=bearer(admin_key))
        assert shown.json()["data"] == {
            "embedding": {"base_url": "https://llm.example/v1", "model": "m", "has_api_key": True},
            "compiler": None,
        }
        await set_providers(http, admin_key, tenant.id, {"embedding": None})
        shown = await http.get(f"/api/v1/tenants/{tenant.id}/providers", headers=bearer(admin_key))
        assert shown.json()["data"]["embedding"] is None

    async def test_a_tenant_provider_embeds_that_tenant_only(
        self,
        http: httpx.AsyncClient,
        tenant: TenantHandle,
        new_tenant: NewTenant,
        admin_key: str,
        stack: CairnStack,
        provider: tuple[FakeProvider, str],
    ) -> None:
        fake, url = provider
        await set_providers(
            http, admin_key, tenant.id, {"embedding": {"base_url": url, "model": "fake", "api_key": KEY}}
        )
        other = await new_tenant()
        mine, theirs = await tenant.agent(), await other.agent()
        await remember(http, mine, text="byok fact: the vault is in Oslo")
        await remember(http, theirs, text="local fact: the vault is in Rome")
        assert await embedding_models(stack.database_url, tenant.id) == {"openai:fake"}
        assert await embedding_models(stack.database_url, other.id) == {"local:all-MiniLM-L6-v2:int8"}
        assert f"Bearer {KEY}" in fake.auth
        result = (
            await http.post(
                "/api/v1/memory/recall",
                json={"query": "byok fact: the vault is in Oslo"},
                headers=bearer(mine),
            )
        ).json()
        assert result["meta"]["fallback"] is False
        assert result["data"][0]["memory"]["text"] == "byok fact: the vault is in Oslo"
        assert result["data"][0]["score"] == pytest.approx(1.0, abs=1e-4)
        assert "byok fact: the vault is in Oslo" in fake.embedded  # the query went to the tenant's provider
        assert "local fact: the vault is in Rome" not in fake.embedded

    async def test_a_provider_without_key_degrades_that_tenant_only(
        self,
        http: httpx.AsyncClient,
        tenant: TenantHandle,
        new_tenant: NewTenant,
        admin_key: str,
    ) -> None:
        mine = await tenant.agent()
        await remember(http, mine, text="the vault is in Oslo")
        await set_providers(
            http, admin_key, tenant.id, {"embedding": {"base_url": "http://127.0.0.1:9/v1", "model": "fake"}}
        )
        await asyncio.sleep(1.2)  # the provider cache TTL in tests
        result = (
            await http.post("/api/v1/memory/recall", json={"query": "vault Oslo"}, headers=bearer(mine))
        ).json()
        assert result["meta"]["fallback"] is True
        assert result["meta"]["reason"] == "embedder_no_api_key"
        assert [h["memory"]["text"] for h in result["data"]] == ["the vault is in Oslo"]
        other = await new_tenant()
        healthy = (
            await http.post(
                "/api/v1/memory/recall", json={"query": "vault"}, headers=bearer(await other.agent())
            )
        ).json()
        assert healthy["meta"]["fallback"] is False

    async def test_a_tenant_compiler_is_used_for_its_promotions(
        self,
        http: httpx.AsyncClient,
        tenant: TenantHandle,
        admin_key: str,
        temporal: Client,  # noqa: F811
        provider: tuple[FakeProvider, str],
    ) -> None:
        fake, url = provider
        await set_providers(
            http, admin_key, tenant.id, {"compiler": {"base_url": url, "model": "chat", "api_key": KEY}}
        )
        key = await tenant.agent()
        await add_turns(http, key, "byok", FACT_TURNS)
        accepted = await promote(http, key, "byok")
        result = await temporal.get_workflow_handle_for(PromoteSession.run, accepted["workflow_id"]).result()
        assert fake.chat_calls == 1
        assert result.promoted == 1
        assert [m["text"] for m in await promoted_rows(http, key)] == [
            "The tenant's own compiler says the deploy window is Thursday"
        ]

    @pytest.mark.usefixtures("sweep_paused")
    async def test_a_failing_compile_does_not_advance_the_watermark(
        self,
        http: httpx.AsyncClient,
        tenant: TenantHandle,
        admin_key: str,
        temporal: Client,  # noqa: F811
        provider: tuple[FakeProvider, str],
    ) -> None:
        fake, url = provider
        await set_providers(
            http, admin_key, tenant.id, {"compiler": {"base_url": url, "model": "chat"}}
        )  # no key
        key = await tenant.agent()
        await add_turns(http, key, "retry-me", FACT_TURNS)
        accepted = await promote(http, key, "retry-me")
        handle = temporal.get_workflow_handle_for(PromoteSession.run, accepted["workflow_id"])
        with pytest.raises(WorkflowFailureError):
            await handle.result()  # every compile attempt failed; the retries ran out
        assert await promoted_rows(http, key) == []
        await set_providers(
            http, admin_key, tenant.id, {"compiler": {"base_url": url, "model": "chat", "api_key": KEY}}
        )
        await asyncio.sleep(1.2)  # the provider cache TTL in tests
        again = await promote(http, key, "retry-me")
        assert again["status"] == "started"  # no watermark was written, so the session is compiled again
        result = await temporal.get_workflow_handle_for(PromoteSession.run, again["workflow_id"]).result()
        assert result.promoted == 1
