"""The typed SDK (`cairn_client`), sync and async, against the real stack: every method, typed errors,
retry on 429 with Retry-After, idempotency keys reused on the SDK's own retries."""

import asyncio
import inspect
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest

from cairn_client import (
    AsyncCairnClient,
    CairnAPIError,
    CairnClient,
    CairnConnectionError,
    Conflict,
    InvalidRequest,
    NotFound,
    QuotaExceeded,
    RateLimited,
    Unauthenticated,
)
from cairn_contracts.identity import Role
from cairn_contracts.memory import Memory, SessionTurn
from cairn_devstack import free_port
from cairn_devstack.cairn import CairnStack
from conftest import TenantHandle

NewTenant = Callable[[], Awaitable[TenantHandle]]


class Either:
    """One interface over both clients: every method is awaited (the sync client's calls just return)."""

    def __init__(self, client: CairnClient | AsyncCairnClient) -> None:
        self.client = client

    def __getattr__(self, name: str) -> Callable[..., Awaitable[Any]]:
        method = getattr(self.client, name)

        async def run(*args: Any, **kwargs: Any) -> Any:
            result = method(*args, **kwargs)
            return await result if inspect.isawaitable(result) else result

        return run

    async def close(self) -> None:
        if isinstance(self.client, AsyncCairnClient):
            await self.client.aclose()
        else:
            self.client.close()


MakeClient = Callable[..., Either]


@pytest.fixture(params=["sync", "async"])
async def make_client(request: pytest.FixtureRequest, stack: CairnStack) -> Any:
    made: list[Either] = []

    def make(key: str | None, **options: Any) -> Either:
        options.setdefault("base_url", stack.gateway_url)
        cls = CairnClient if request.param == "sync" else AsyncCairnClient
        client = Either(cls(api_key=key, **options))
        made.append(client)
        return client

    yield make
    for client in made:
        await client.close()


async def until(check: Callable[[], Awaitable[bool]], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not await check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.2)


class TestMemoryMethods:
    async def test_every_memory_method(self, make_client: MakeClient, tenant: TenantHandle) -> None:
        c = make_client(await tenant.agent("sdk-agent"))
        me = await c.whoami()
        assert (me.tenant_id, me.subject_id, me.role) == (tenant.id, "sdk-agent", Role.agent)

        memory = await c.remember("The user's favourite colour is teal", tags=["pref"], confidence=0.8)
        assert isinstance(memory, Memory)
        assert (memory.tags, memory.confidence) == (["pref"], 0.8)
        assert (await c.get(memory.id)).text == memory.text

        page = await c.list(limit=5)
        assert [m.id for m in page.data] == [memory.id]
        assert page.meta["total_count"] == 1

        async def recalled() -> bool:
            result = await c.recall("what colour does the user like?", limit=3)
            return memory.id in [hit.memory.id for hit in result.data]

        await until(recalled, "recall to find the memory")

        newer = await c.supersede(memory.id, "The user's favourite colour is now orange")
        assert (await c.list()).data[0].id == newer.id
        assert {m.id for m in (await c.list(include_superseded=True)).data} == {memory.id, newer.id}

        turn = await c.append_turn("sdk-session", "user", "I switched to orange", ttl_seconds=600)
        assert isinstance(turn, SessionTurn)
        await c.append_turn("sdk-session", "assistant", "Noted: orange it is.")
        history = await c.session_history("sdk-session")
        assert [t.content for t in history.data] == ["I switched to orange", "Noted: orange it is."]
        accepted = await c.promote("sdk-session")
        assert accepted.status in {"started", "running"}

        gone = await c.forget(newer.id)
        assert gone.id == newer.id
        with pytest.raises(NotFound) as missing:
            await c.get(newer.id)
        assert (missing.value.code, missing.value.status) == ("not_found", 404)

    async def test_projects(self, make_client: MakeClient, tenant: TenantHandle) -> None:
        c = make_client(await tenant.agent())
        slug = f"sdk-{uuid.uuid4().hex[:8]}"
        project = await c.create_project("SDK project", slug, repo_url=f"https://github.com/acme/{slug}")
        assert (await c.resolve_project(repo_url=f"acme/{slug}")).id == project.id
        assert (await c.resolve_project(slug=slug)).id == project.id
        assert project.id in [p.id for p in await c.list_projects()]
        scoped = await c.remember("project fact", project_id=project.id)
        assert scoped.project_id == project.id
        with pytest.raises(InvalidRequest) as none_given:
            await c.resolve_project()
        assert none_given.value.code == "no_identifier"


class TestOperatorMethods:
    async def test_tenants_keys_and_providers(self, make_client: MakeClient, admin_key: str) -> None:
        admin = make_client(admin_key)
        made = await admin.create_tenant(f"sdk-{uuid.uuid4().hex[:10]}")
        patched = await admin.patch_tenant(made.id, memory_quota=5, rate_limit_burst=7)
        assert (patched.memory_quota, patched.rate_limit_burst) == (5, 7)
        key = await admin.create_key("agent", tenant_id=made.id, agent_id="op-agent", name="sdk test")
        assert key.key.startswith("cairn_")
        assert [k.id for k in await admin.list_keys(made.id)] == [key.id]
        providers = await admin.get_providers(made.id)
        assert providers.embedding is None
        revoked = await admin.revoke_key(key.id)
        assert revoked.revoked_at is not None

        async def refused() -> bool:
            try:
                await make_client(key.key).whoami()
            except Unauthenticated:
                return True
            return False

        await until(refused, "the revoked key to be refused")

    async def test_oversight_lists_every_subject(
        self, make_client: MakeClient, tenant: TenantHandle, admin_key: str
    ) -> None:
        for agent in ("a1", "a2"):
            await make_client(await tenant.agent(agent)).remember(f"memory of {agent}")
        oversight = make_client(admin_key, impersonate_tenant=tenant.id)
        page = await oversight.list(all_subjects=True)
        assert {m.subject_id for m in page.data} == {"a1", "a2"}


class TestKnowledgeAndMergedRecall:
    async def test_propose_get_search_recall_context_referenced_graduate(
        self, make_client: MakeClient, tenant: TenantHandle
    ) -> None:
        c = make_client(await tenant.agent())
        title = f"Deploys run on Tuesdays {uuid.uuid4().hex[:6]}"
        proposed = await c.knowledge_propose(
            title, "The team deploys every Tuesday after standup.", tags=["ops"]
        )
        assert proposed.created
        article = await c.knowledge_get(proposed.article.id)
        assert article.body == "The team deploys every Tuesday after standup."

        async def searchable() -> bool:
            hits = await c.knowledge_search("when do deploys run?")
            return article.id in [h.id for h in hits.data]

        await until(searchable, "the article to be searchable")
        memory = await c.remember("I deploy the billing service myself on Tuesdays")
        merged = await c.recall_context("when do deploys run?", limit=5)
        sources = {item.source for item in merged.data}
        assert "knowledge" in sources
        surfaced = [item.id for item in merged.data if item.source == "knowledge"]
        recorded = await c.referenced(merged.meta.recall_id, surfaced[:1])
        assert recorded.article_ids == surfaced[:1]
        with pytest.raises(InvalidRequest) as foreign:
            await c.referenced(merged.meta.recall_id, [str(uuid.uuid4())])
        assert foreign.value.code == "not_surfaced"

        graduated = await c.graduate(memory.id)
        assert graduated.article.source == "graduated"
        again = await c.graduate(memory.id)
        assert again.article.id == graduated.article.id


class TestTypedErrors:
    async def test_codes_and_statuses(self, make_client: MakeClient, tenant: TenantHandle) -> None:
        c = make_client(await tenant.agent())
        with pytest.raises(InvalidRequest) as too_long:
            await c.remember("x" * (16 * 1024 + 1))
        assert (too_long.value.code, too_long.value.status) == ("text_too_long", 422)
        with pytest.raises(InvalidRequest) as bad_query:
            await c.recall("   ")
        assert bad_query.value.code == "invalid_query"
        with pytest.raises(NotFound):
            await c.forget(str(uuid.uuid4()))
        first = await c.remember("to be superseded")
        await c.supersede(first.id, "newer")
        with pytest.raises(Conflict) as twice:
            await c.supersede(first.id, "newest")
        assert twice.value.status == 409
        with pytest.raises(Unauthenticated) as anonymous:
            await make_client("cairn_unknown").whoami()
        assert anonymous.value.code == "unauthenticated"
        assert isinstance(anonymous.value, CairnAPIError)

    async def test_quota_exceeded(
        self, make_client: MakeClient, tenant: TenantHandle, admin_key: str
    ) -> None:
        await make_client(admin_key).patch_tenant(tenant.id, memory_quota=1)
        c = make_client(await tenant.agent())
        await c.remember("fits")
        with pytest.raises(QuotaExceeded) as full:
            await c.remember("does not fit")
        assert (full.value.code, full.value.status) == ("quota_exceeded", 422)

    async def test_connection_failure_is_typed_and_bounded(self, make_client: MakeClient) -> None:
        c = make_client("cairn_x", base_url=f"http://127.0.0.1:{free_port()}", max_retries=2)
        started = time.monotonic()
        with pytest.raises(CairnConnectionError):
            await c.whoami()
        assert time.monotonic() - started < 5


class TestRetry:
    async def test_429_is_retried_after_retry_after_and_the_write_applies_once(
        self, make_client: MakeClient, tenant: TenantHandle, admin_key: str, http: httpx.AsyncClient
    ) -> None:
        await make_client(admin_key).patch_tenant(tenant.id, rate_limit_per_second=1, rate_limit_burst=1)
        key = await tenant.agent()
        c = make_client(key)
        await c.remember("first write takes the only token")
        started = time.monotonic()
        second = await c.remember("second write waits for Retry-After")
        assert time.monotonic() - started >= 0.9  # Retry-After: 1
        page = await c.list()
        assert [m.text for m in page.data].count("second write waits for Retry-After") == 1
        assert second.id in [m.id for m in page.data]

    async def test_retries_can_be_turned_off(
        self, make_client: MakeClient, tenant: TenantHandle, admin_key: str
    ) -> None:
        await make_client(admin_key).patch_tenant(tenant.id, rate_limit_per_second=0.01, rate_limit_burst=1)
        c = make_client(await tenant.agent(), retry=False)
        await c.remember("takes the only token")
        with pytest.raises(RateLimited) as limited:
            await c.remember("refused")
        assert limited.value.status == 429
        assert limited.value.retry_after is not None
        assert limited.value.retry_after >= 1

    async def test_a_retry_after_longer_than_the_cap_is_raised_at_once(
        self, make_client: MakeClient, tenant: TenantHandle, admin_key: str
    ) -> None:
        await make_client(admin_key).patch_tenant(tenant.id, rate_limit_per_second=0.01, rate_limit_burst=1)
        c = make_client(await tenant.agent())
        await c.remember("takes the only token")
        started = time.monotonic()
        with pytest.raises(RateLimited):
            await c.remember("would wait ~100 s")
        assert time.monotonic() - started < 2

    async def test_the_idempotency_key_is_reused_on_retries(
        self, make_client: MakeClient, tenant: TenantHandle, http: httpx.AsyncClient
    ) -> None:
        key = await tenant.agent()
        c = make_client(key)
        idem = str(uuid.uuid4())
        first = await c.remember("explicit key", idempotency_key=idem)
        replay = await c.remember("explicit key", idempotency_key=idem)
        assert replay.id == first.id
        assert [m.id for m in (await c.list()).data] == [first.id]


class TestKeysStaySecret:
    def test_the_key_is_redacted_in_repr_and_sent_in_full(self) -> None:
        client = CairnClient("http://127.0.0.1:1", "cairn_not-for-logs")
        assert "cairn_not-for-logs" not in repr(client.config)
        assert client.config.headers()["Authorization"] == "Bearer cairn_not-for-logs"
        other = client.with_options(api_key="cairn_second")
        assert other.config.headers()["Authorization"] == "Bearer cairn_second"
        assert "cairn_second" not in repr(other.config)
        client.close()
