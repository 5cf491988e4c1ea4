"""Recall through the gateway: ranking, isolation on every path, limits, partitions, fallback, hotness."""

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
from tests.e2e.test_memory import listed, remember
from tests.e2e.test_spine import assert_envelope

NewTenant = Callable[[], Awaitable[TenantHandle]]

FACTS = [
    "The user prefers dark mode in every editor",
    "The staging database listens on port 6543",
    "Deployments happen on Tuesdays after the standup",
    "Alice's flight AF 1234 lands at 14:05 in Lyon",
    "The user is allergic to peanuts",
    "Our CI pipeline fails with ERR_CONN_RESET when the proxy restarts",
    "The quarterly report is due on the 15th",
    "The team decided to use PostgreSQL instead of MongoDB",
]


async def wait_embedded(http: httpx.AsyncClient, key: str, count: int) -> None:
    for _ in range(150):
        page = await listed(http, key, limit=100, include_superseded="true")
        ready = [m for m in page["data"] if m["embedding_status"] == "ready"]
        if len(ready) >= count:
            return
        await asyncio.sleep(0.2)
    raise AssertionError(f"only {len(ready)} of {count} memories embedded")


async def recall(http: httpx.AsyncClient, key: str, **body: Any) -> dict[str, Any]:
    response = await http.post("/api/v1/memory/recall", json=body, headers=bearer(key))
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


async def seeded(http: httpx.AsyncClient, tenant: TenantHandle, agent_id: str) -> str:
    key = await tenant.agent(agent_id)
    for fact in FACTS:
        await remember(http, key, text=fact)
    await wait_embedded(http, key, len(FACTS))
    return key


class TestRanking:
    async def test_relevant_memory_ranks_first_and_foreign_ones_never_appear(
        self, http: httpx.AsyncClient, tenant: TenantHandle, new_tenant: NewTenant
    ) -> None:
        key = await seeded(http, tenant, "owner")
        neighbour = await tenant.agent("neighbour")
        await remember(http, neighbour, text="The user prefers a dark color theme for the editor")
        other = await new_tenant()
        stranger = await other.agent("owner")  # same agent_id, other tenant
        await remember(http, stranger, text="The user prefers dark mode everywhere")
        await wait_embedded(http, neighbour, 1)
        await wait_embedded(http, stranger, 1)
        own_ids = {m["id"] for m in (await listed(http, key, limit=100))["data"]}
        for mode in ("hybrid", "semantic"):
            result = await recall(http, key, query="which UI theme does the user like?", mode=mode)
            assert result["data"][0]["memory"]["text"] == FACTS[0], result["data"][:3]
            assert {h["memory"]["id"] for h in result["data"]} <= own_ids
            assert result["meta"]["fallback"] is False
            assert result["meta"]["reason"] is None
            assert result["meta"]["strategy"] == "ann"
            assert result["meta"]["ann_iterative_scan"] == "applied"
            assert all(-1.0 <= h["score"] <= 1.0 for h in result["data"])

    async def test_exact_names_and_codes_are_found_by_the_keyword_side(
        self, http: httpx.AsyncClient, tenant: TenantHandle
    ) -> None:
        key = await seeded(http, tenant, "codes")
        result = await recall(http, key, query="ERR_CONN_RESET", limit=3)
        top = result["data"][0]
        assert "ERR_CONN_RESET" in top["memory"]["text"]
        assert top["selection_reason"] in {"keyword", "keyword+semantic"}
        flight = await recall(http, key, query="AF 1234", limit=3)
        assert "AF 1234" in flight["data"][0]["memory"]["text"]

    async def test_small_subject_takes_the_exact_path(
        self, http: httpx.AsyncClient, tenant: TenantHandle
    ) -> None:
        key = await tenant.agent()
        await remember(http, key, text="The user prefers dark mode")
        await wait_embedded(http, key, 1)
        result = await recall(http, key, query="dark mode preference")
        assert result["meta"]["strategy"] == "exact"
        assert "ann_iterative_scan" not in result["meta"]
        assert result["meta"]["underfilled"] is True
        assert result["data"][0]["score"] > 0.5

    async def test_empty_scope_is_distinguishable_from_degradation(
        self, http: httpx.AsyncClient, tenant: TenantHandle
    ) -> None:
        result = await recall(http, await tenant.agent(), query="anything at all")
        assert result["data"] == []
        assert result["meta"]["fallback"] is False
        assert result["meta"]["reason"] is None
        assert result["meta"]["underfilled"] is True


class TestValidation:
    @pytest.mark.parametrize("query", [None, 5, "", "   \n\t", ["a"]])
    async def test_bad_queries_are_invalid_query(
        self, http: httpx.AsyncClient, tenant: TenantHandle, query: Any
    ) -> None:
        key = await tenant.agent()
        response = await http.post("/api/v1/memory/recall", json={"query": query}, headers=bearer(key))
        assert_envelope(response, 422, "invalid_query")

    async def test_query_length_at_and_past_the_edge(
        self, http: httpx.AsyncClient, tenant: TenantHandle
    ) -> None:
        key = await tenant.agent()
        await recall(http, key, query="q" * limits.QUERY_MAX_CHARS)
        response = await http.post(
            "/api/v1/memory/recall", json={"query": "q" * (limits.QUERY_MAX_CHARS + 1)}, headers=bearer(key)
        )
        assert_envelope(response, 422, "query_too_long")

    async def test_limit_edges(self, http: httpx.AsyncClient, tenant: TenantHandle) -> None:
        key = await tenant.agent()
        await recall(http, key, query="x", limit=1)
        await recall(http, key, query="x", limit=limits.RECALL_LIMIT_MAX)
        for bad in (0, limits.RECALL_LIMIT_MAX + 1):
            response = await http.post(
                "/api/v1/memory/recall", json={"query": "x", "limit": bad}, headers=bearer(key)
            )
            assert_envelope(response, 422, "validation_error")


class TestPartitionsAndSupersede:
    async def test_project_partition(self, http: httpx.AsyncClient, tenant: TenantHandle) -> None:
        key = await tenant.agent()
        project = (
            await http.post("/api/v1/projects", json={"name": "P", "slug": "p"}, headers=bearer(key))
        ).json()
        pid = project["data"]["id"]
        await remember(http, key, text="global: the user likes green tea")
        await remember(http, key, text="project: the build uses green tea caching", project_id=pid)
        await wait_embedded(http, key, 2)

        async def texts(**extra: Any) -> set[str]:
            data = (await recall(http, key, query="green tea", **extra))["data"]
            return {h["memory"]["text"] for h in data}

        assert await texts() == {"global: the user likes green tea"}
        assert await texts(project_id=pid) == {
            "global: the user likes green tea",
            "project: the build uses green tea caching",
        }
        assert await texts(project_id=str(uuid.uuid4())) == {"global: the user likes green tea"}
        malformed = await http.post(
            "/api/v1/memory/recall", json={"query": "x", "project_id": "nope"}, headers=bearer(key)
        )
        assert_envelope(malformed, 422, "invalid_project_id")

    async def test_include_superseded_uses_the_exact_read(
        self, http: httpx.AsyncClient, tenant: TenantHandle
    ) -> None:
        key = await tenant.agent()
        old = await remember(http, key, text="The office is in Berlin")
        newer = await http.post(
            f"/api/v1/memory/{old['id']}/supersede",
            json={"text": "The office moved to Paris"},
            headers=bearer(key),
        )
        assert newer.status_code == 201
        await wait_embedded(http, key, 2)
        default = await recall(http, key, query="where is the office in Berlin")
        assert old["id"] not in {h["memory"]["id"] for h in default["data"]}
        everything = await recall(http, key, query="where is the office in Berlin", include_superseded=True)
        assert everything["data"][0]["memory"]["id"] == old["id"]
        assert everything["data"][0]["memory"]["superseded_by"] == newer.json()["data"]["id"]
        assert "ann_iterative_scan" not in everything["meta"]


class TestHotness:
    async def test_bump_respects_floor_and_cooldown(
        self, http: httpx.AsyncClient, tenant: TenantHandle
    ) -> None:
        key = await seeded(http, tenant, "hot")
        result = await recall(http, key, query=FACTS[1], limit=10)
        hot = [h for h in result["data"] if h["score"] >= 0.6]
        cold = [h for h in result["data"] if h["score"] < 0.6]
        assert hot
        assert cold
        hot_id = hot[0]["memory"]["id"]
        for _ in range(50):
            got = (await http.get(f"/api/v1/memory/{hot_id}", headers=bearer(key))).json()["data"]
            if got["recall_count"] == 1:
                break
            await asyncio.sleep(0.1)
        assert got["recall_count"] == 1
        assert got["last_recalled_at"]
        again = await recall(http, key, query=FACTS[1], limit=10)  # inside the cooldown: no second bump
        # The recall reply carries the counters too (read beside the memory, migration 0020).
        shown = next(h["memory"] for h in again["data"] if h["memory"]["id"] == hot_id)
        assert shown["recall_count"] == 1
        assert shown["last_recalled_at"] == got["last_recalled_at"]
        await asyncio.sleep(1.0)
        assert (await http.get(f"/api/v1/memory/{hot_id}", headers=bearer(key))).json()["data"][
            "recall_count"
        ] == 1
        for hit in cold:
            row = (await http.get(f"/api/v1/memory/{hit['memory']['id']}", headers=bearer(key))).json()[
                "data"
            ]
            assert row["recall_count"] == 0


class TestFallback:
    async def test_broken_embedder_degrades_to_scoped_ilike_and_never_bumps(
        self, http: httpx.AsyncClient, tenant: TenantHandle, new_tenant: NewTenant, stack: CairnStack
    ) -> None:
        key = await seeded(http, tenant, "owner")
        neighbour = await tenant.agent("neighbour")
        await remember(http, neighbour, text="Neighbour: the staging database listens on port 7000")
        other = await new_tenant()
        await remember(http, await other.agent("owner"), text="Stranger: staging database on port 9999")
        await stack.supervisor.stop("recall")
        # A provider that refuses connections: every embedding fails, the breaker opens after one failure.
        broken = {
            "CAIRN_EMBEDDING_PROVIDER": "openai",
            "CAIRN_EMBEDDING_OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
            "CAIRN_EMBEDDING_OPENAI_API_KEY": "test-key-for-a-dead-endpoint",
            "CAIRN_EMBEDDING_OPENAI_MODEL": "none",
            "CAIRN_EMBEDDING_BREAKER_FAILURE_THRESHOLD": "1",
        }
        await stack.start_service("recall", "cairn_recall", **broken)
        try:
            await stack.wait_ready(timeout=60)
            reasons = []
            for _ in range(2):
                result = await recall(http, key, query="staging database")
                assert result["meta"]["fallback"] is True
                assert result["meta"]["strategy"] == "ilike"
                assert "ann_iterative_scan" not in result["meta"]
                reasons.append(result["meta"]["reason"])
                assert [h["memory"]["text"] for h in result["data"]] == [FACTS[1]]
                assert all(
                    h["score"] is None and h["selection_reason"] == "ilike_fallback" for h in result["data"]
                )
            assert reasons == ["embedder_provider_error", "embedder_circuit_open"]
            await asyncio.sleep(0.5)
            page = await listed(http, key, limit=100)
            assert all(m["recall_count"] == 0 for m in page["data"])
        finally:
            await stack.supervisor.stop("recall")
            await stack.start_service("recall", "cairn_recall")
            await stack.wait_ready(timeout=60)


def _long_memory(passage: str) -> str:
    """About 7,000 characters on one topic with `passage` in its last 500: far past the model's window."""
    filler = [
        f"Weather log {i}: the morning was {['grey', 'clear', 'windy', 'humid'][i % 4]} with "
        f"{10 + i % 15} degrees, light {['rain', 'drizzle', 'fog', 'sun'][i % 4]} by noon and a calm evening."
        for i in range(70)
    ]
    return " ".join(filler) + " " + passage


class TestLongMemories:
    PASSAGE = "Finally: the spare key to the garden shed is hidden under the blue flowerpot by the gate."

    async def test_a_passage_in_the_last_third_finds_its_memory(
        self, http: httpx.AsyncClient, tenant: TenantHandle
    ) -> None:
        key = await tenant.agent()
        text = _long_memory(self.PASSAGE)
        assert len(text.encode()) <= limits.MEMORY_TEXT_MAX_BYTES
        assert text.index(self.PASSAGE) > 2 * len(text) // 3
        long_id = (await remember(http, key, text=text))["id"]
        for fact in FACTS:
            await remember(http, key, text=fact)
        await wait_embedded(http, key, len(FACTS) + 1)
        for mode in ("semantic", "hybrid"):
            result = await recall(http, key, query="where is the spare shed key hidden?", mode=mode, limit=3)
            top = result["data"][0]
            assert top["memory"]["id"] == long_id, (mode, [h["memory"]["text"][:60] for h in result["data"]])
            assert top["memory"]["text"] == text  # the API's memory model is unchanged: one memory, whole
            # Scored by its best chunk (its weather-log head is unrelated to the question).
            assert top["score"] > max(h["score"] for h in result["data"][1:])

    async def test_chunks_go_with_their_memory(
        self, http: httpx.AsyncClient, tenant: TenantHandle, stack: CairnStack
    ) -> None:
        key = await tenant.agent()
        long_id = (await remember(http, key, text=_long_memory(self.PASSAGE)))["id"]
        await wait_embedded(http, key, 1)
        conn = await asyncpg.connect(stack.database_url)
        try:
            count = "SELECT count(*) FROM memory_chunks WHERE memory_id = $1"
            assert await conn.fetchval(count, uuid.UUID(long_id)) >= 7
            response = await http.delete(f"/api/v1/memory/{long_id}", headers=bearer(key))
            assert response.status_code in (200, 204), response.text
            assert await conn.fetchval(count, uuid.UUID(long_id)) == 0
        finally:
            await conn.close()
