"""The query-embedding caches (memory recall's and knowledge search's) are keyed by tenant and provider
endpoint + model: two tenants with different providers (same model name) asking the same text each reach
their own provider, and a repeat within one tenant is served from the cache."""

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

import httpx
import pytest
import pytest_asyncio
from aiohttp import web

from conftest import TenantHandle, bearer

DIM = 384
QUERY = "which editor does the user prefer for long documents?"


@dataclass
class Provider:
    axis: int
    url: str = ""
    inputs: list[str] = field(default_factory=list)

    async def embeddings(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.inputs.extend(body["input"])
        vector = [0.0] * DIM
        vector[self.axis] = 1.0
        return web.json_response(
            {"data": [{"index": i, "embedding": vector} for i in range(len(body["input"]))]}
        )

    def asked(self, text: str) -> int:
        return self.inputs.count(text)


@pytest_asyncio.fixture
async def providers() -> AsyncIterator[Callable[[int], Awaitable[Provider]]]:
    runners: list[web.AppRunner] = []

    async def start(axis: int) -> Provider:
        provider = Provider(axis)
        app = web.Application()
        app.router.add_post("/v1/embeddings", provider.embeddings)
        runner = web.AppRunner(app)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        runners.append(runner)
        host, port = runner.addresses[0][:2]
        provider.url = f"http://{host}:{port}/v1"
        return provider

    yield start
    for runner in runners:
        await runner.cleanup()


async def use_provider(http: httpx.AsyncClient, tenant: TenantHandle, provider: Provider) -> None:
    response = await http.put(
        f"/api/v1/tenants/{tenant.id}/providers",
        json={"embedding": {"base_url": provider.url, "model": "shared-model", "api_key": "sk-cache-test"}},
        headers=bearer(tenant.admin_key),
    )
    assert response.status_code == 200, response.text


async def search(http: httpx.AsyncClient, path: str, key: str) -> dict[str, object]:
    response = await http.post(path, json={"query": QUERY, "mode": "semantic"}, headers=bearer(key))
    assert response.status_code == 200, response.text
    meta: dict[str, object] = response.json()["meta"]
    assert meta["fallback"] is False, meta  # the query was embedded, not degraded
    return meta


@pytest.mark.parametrize("path", ["/api/v1/memory/recall", "/api/v1/knowledge/search"])
async def test_two_tenants_same_query_never_share_an_entry(
    path: str,
    http: httpx.AsyncClient,
    new_tenant: Callable[[], Awaitable[TenantHandle]],
    providers: Callable[[int], Awaitable[Provider]],
) -> None:
    tenant_a, tenant_b, tenant_c = await new_tenant(), await new_tenant(), await new_tenant()
    provider_a, provider_b = await providers(0), await providers(1)
    await use_provider(http, tenant_a, provider_a)
    await use_provider(http, tenant_b, provider_b)  # same model name, another endpoint
    key_a, key_b, key_c = await tenant_a.agent(), await tenant_b.agent(), await tenant_c.agent()

    await search(http, path, key_a)
    assert provider_a.asked(QUERY) == 1
    await search(http, path, key_a)
    assert provider_a.asked(QUERY) == 1  # the repeat came from the cache

    await search(http, path, key_b)
    assert provider_b.asked(QUERY) == 1  # not tenant A's cached vector
    await search(http, path, key_c)  # the default local model: neither provider is asked
    assert (provider_a.asked(QUERY), provider_b.asked(QUERY)) == (1, 1)
    await search(http, path, key_b)
    assert provider_b.asked(QUERY) == 1
