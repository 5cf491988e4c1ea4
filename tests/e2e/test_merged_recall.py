"""Merged recall (`POST /api/v1/recall`) through the gateway: determinism, the ledger's arithmetic,
answer_confidence, validation, the degraded paths, and diversity on the knowledge half (near-copies,
the session shown-set with its refill and readmission floor, and its isolation)."""

import asyncio
import json
import math
import uuid
from typing import Any

import httpx

from cairn_contracts import limits
from cairn_devstack.cairn import CairnStack
from conftest import TenantHandle, bearer
from tests.e2e.test_knowledge import ARTICLES, propose, seed, set_embedding_provider_without_key
from tests.e2e.test_memory import remember
from tests.e2e.test_recall import wait_embedded
from tests.e2e.test_spine import assert_envelope

MEMORIES = [
    "I deployed the billing service to staging yesterday",
    "The staging database password rotation is scheduled for Monday",
    "My pull request for the proxy retry fix is waiting for review",
]


async def recall_context(http: httpx.AsyncClient, key: str, **body: Any) -> dict[str, Any]:
    response = await http.post("/api/v1/recall", json=body, headers=bearer(key))
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


async def agent_with_both(http: httpx.AsyncClient, tenant: TenantHandle) -> str:
    key = await tenant.agent()
    await seed(http, key)
    for text in MEMORIES:
        await remember(http, key, text=text)
    await wait_embedded(http, key, len(MEMORIES))
    return key


def text_of(item: dict[str, Any]) -> str:
    if item["source"] == "memory":
        return str(item["memory"]["text"])
    return f"{item['article']['title']}\n{item['article']['snippet']}"


class TestMergedList:
    async def test_repeat_calls_return_a_byte_identical_data_array_and_a_new_recall_id(
        self, http: httpx.AsyncClient, tenant: TenantHandle
    ) -> None:
        key = await agent_with_both(http, tenant)
        body = {"query": "staging database", "limit": 6}
        first = await http.post("/api/v1/recall", json=body, headers=bearer(key))
        await asyncio.sleep(0.3)  # hotness bumps land in between: the merged list must not show them
        second = await http.post("/api/v1/recall", json=body, headers=bearer(key))
        a, b = first.json(), second.json()
        assert a["meta"]["recall_id"] != b["meta"]["recall_id"]
        uuid.UUID(a["meta"]["recall_id"])
        assert json.dumps(a["data"]) == json.dumps(b["data"])
        assert {i["source"] for i in a["data"]} == {"memory", "knowledge"}

    async def test_items_are_sorted_by_score_then_knowledge_first_then_id(
        self, http: httpx.AsyncClient, tenant: TenantHandle
    ) -> None:
        key = await agent_with_both(http, tenant)
        result = await recall_context(http, key, query="staging database proxy review", limit=8)
        data = result["data"]
        keys = [(-i["score"], 0 if i["source"] == "knowledge" else 1, i["id"]) for i in data]
        assert keys == sorted(keys)
        assert [i["rank"] for i in data] == list(range(1, len(data) + 1))
        assert result["meta"]["results_ranking"] == "heuristic_cross_source"
        for item in data:
            if item["source"] == "knowledge":
                assert item["article"]["id"] == item["id"]
                assert item["memory"] is None
                assert item["selection_reason"] in ("keyword", "semantic", "keyword+semantic")
            else:
                assert item["memory"]["id"] == item["id"]
                assert item["article"] is None
                assert item["selection_reason"] in ("semantic", "keyword", "keyword+semantic")
                assert "recall_count" not in item["memory"]
        assert set(result["memory"]) == {"data", "meta"}
        assert set(result["knowledge"]) == {"data", "meta"}
        assert result["knowledge"]["meta"]["limit"] == 8

    async def test_the_ledger_adds_up(self, http: httpx.AsyncClient, tenant: TenantHandle) -> None:
        key = await agent_with_both(http, tenant)
        result = await recall_context(http, key, query="staging database", limit=4)
        meta, data = result["meta"], result["data"]
        for item in data:
            assert item["tokens_estimate"] == math.ceil(len(text_of(item).encode()) / 4)
        assert meta["selected_count"] == len(data) == 4
        assert meta["tokens_selected"] == sum(i["tokens_estimate"] for i in data)
        memory_tokens = sum(
            math.ceil(len(h["memory"]["text"].encode()) / 4) for h in result["memory"]["data"]
        )
        knowledge_tokens = sum(
            math.ceil(len(f"{h['title']}\n{h['snippet']}".encode()) / 4) for h in result["knowledge"]["data"]
        )
        assert meta["tokens_candidates"] == memory_tokens + knowledge_tokens
        assert meta["tokens_saved_vs_candidates"] == meta["tokens_candidates"] - meta["tokens_selected"]
        assert meta["tokens_saved_vs_candidates"] > 0
        considered = meta["candidates_considered"]
        assert considered["memory"] == len(result["memory"]["data"])
        assert considered["knowledge"] == result["knowledge"]["meta"]["candidates"]
        assert considered["knowledge"] >= len(result["knowledge"]["data"])
        assert considered["total"] == considered["memory"] + considered["knowledge"]
        assert meta["memory_count"] + meta["knowledge_count"] == meta["selected_count"]
        assert meta["knowledge_count"] == sum(1 for i in data if i["source"] == "knowledge")
        assert meta["degraded"] is False
        assert meta["degraded_reason"] is None
        assert meta["diversity"]["mode"] == "reduce"

    async def test_answer_confidence_none_on_an_empty_knowledge_base_answer_for_an_exact_match(
        self, http: httpx.AsyncClient, tenant: TenantHandle
    ) -> None:
        key = await tenant.agent()
        await remember(http, key, text=MEMORIES[0])
        await wait_embedded(http, key, 1)
        empty = await recall_context(http, key, query="billing service staging")
        assert empty["meta"]["answer_confidence"] == "none"
        assert empty["meta"]["provenance"] == "none"
        assert empty["meta"]["confidence"] is None
        assert [i["source"] for i in empty["data"]] == ["memory"]  # the memory half still answered
        await seed(http, key)
        exact = await recall_context(http, key, query=ARTICLES[2][1])
        assert exact["meta"]["answer_confidence"] == "answer"
        assert exact["data"][0]["source"] == "knowledge"
        assert exact["data"][0]["article"]["title"] == ARTICLES[2][0]
        junk = await recall_context(http, key, query="zebra migration patterns in the serengeti")
        assert junk["meta"]["answer_confidence"] == "weak"

    async def test_query_and_session_validation(self, http: httpx.AsyncClient, tenant: TenantHandle) -> None:
        key = await tenant.agent()
        for query in ("", "  ", None, 7):
            assert_envelope(
                await http.post("/api/v1/recall", json={"query": query}, headers=bearer(key)),
                422,
                "invalid_query",
            )
        cap = limits.QUERY_MAX_CHARS
        await recall_context(http, key, query="q" * cap)
        assert_envelope(
            await http.post("/api/v1/recall", json={"query": "q" * (cap + 1)}, headers=bearer(key)),
            422,
            "query_too_long",
        )
        await recall_context(http, key, query="q", session_id="s" * limits.SESSION_ID_MAX_BYTES)
        for session_id in ("s" * (limits.SESSION_ID_MAX_BYTES + 1), "é" * 101, 5, ["s"], {"a": 1}):
            response = await http.post(
                "/api/v1/recall", json={"query": "q", "session_id": session_id}, headers=bearer(key)
            )
            assert_envelope(response, 422, "invalid_session_id")
        await recall_context(http, key, query="q", limit=limits.RECALL_LIMIT_MAX)
        for limit in (0, limits.RECALL_LIMIT_MAX + 1):
            response = await http.post(
                "/api/v1/recall", json={"query": "q", "limit": limit}, headers=bearer(key)
            )
            assert_envelope(response, 422, "validation_error")
        response = await http.post("/api/v1/recall", json={"query": "nul\u0000"}, headers=bearer(key))
        assert response.status_code == 422

    async def test_project_partition_applies_to_both_halves(
        self, http: httpx.AsyncClient, tenant: TenantHandle
    ) -> None:
        key = await tenant.agent()
        r = await http.post("/api/v1/projects", json={"name": "p", "slug": "p"}, headers=bearer(key))
        project = r.json()["data"]["id"]
        await remember(http, key, text="Global memory about the harbour crane", project_id=None)
        await remember(http, key, text="Project memory about the harbour crane", project_id=project)
        await propose(http, key, 201, title="Global crane", body="The harbour crane is inspected yearly.")
        await propose(
            http,
            key,
            201,
            title="Project crane",
            body="Project crane load limit is 40 tons.",
            project_id=project,
        )
        await wait_embedded(http, key, 2)
        glob = await recall_context(http, key, query="harbour crane")
        texts = {text_of(i).split("\n")[0] for i in glob["data"]}
        assert texts == {"Global memory about the harbour crane", "Global crane"}
        both = await recall_context(http, key, query="harbour crane", project_id=project)
        assert len(both["data"]) == 4


class TestDegraded:
    async def test_embedder_down_degrades_both_halves_without_a_500(
        self, http: httpx.AsyncClient, tenant: TenantHandle, admin_key: str
    ) -> None:
        key = await agent_with_both(http, tenant)
        await set_embedding_provider_without_key(http, admin_key, tenant.id)
        result = await recall_context(http, key, query="staging database")
        assert result["meta"]["degraded"] is True
        assert "knowledge_fallback:embedder_no_api_key" in result["meta"]["degraded_reason"]
        assert "memory_fallback:embedder_no_api_key" in result["meta"]["degraded_reason"]
        assert result["data"]
        assert {i["selection_reason"] for i in result["data"]} <= {
            "keyword_fallback",
            "ilike_fallback",
            "unscored",
        }

    async def test_knowledge_service_stopped_returns_the_memory_half(
        self, http: httpx.AsyncClient, tenant: TenantHandle, stack: CairnStack
    ) -> None:
        key = await agent_with_both(http, tenant)
        await stack.supervisor.stop("knowledge")
        try:
            result = await recall_context(http, key, query="staging database")
            assert result["meta"]["degraded"] is True
            assert result["meta"]["degraded_reason"].startswith("knowledge_")
            assert result["data"]
            assert {i["source"] for i in result["data"]} == {"memory"}
            assert result["meta"]["answer_confidence"] == "none"
            assert result["meta"]["candidates_considered"]["knowledge"] == 0
            assert result["knowledge"]["data"] == []
            assert "error" in result["knowledge"]["meta"]
        finally:
            await stack.start_service("knowledge", "cairn_knowledge")
            await stack.wait_ready(timeout=90)
        healthy = await recall_context(http, key, query="staging database")
        assert healthy["meta"]["degraded"] is False


PROXY_FIX = "When the corporate proxy restarts, CI fails with ERR_CONN_RESET; retry the job once."
PROXY_FIX_COPY = "When the corporate proxy restarts, CI fails with ERR_CONN_RESET. Retry the job once."
ALLOWLIST = "Add new CI runners to the corporate proxy allowlist before their first build."
OTHERS = [
    ("Proxy timeouts", "The corporate proxy drops idle CI connections after 300 seconds; keepalive is 60s."),
    ("Proxy certificates", "The corporate proxy re-signs TLS; CI images trust its root certificate."),
    ("Build caching", "CI caches dependencies per branch; the proxy is bypassed for the cache host."),
]


async def knowledge_ids(http: httpx.AsyncClient, key: str, **body: Any) -> list[str]:
    result = await recall_context(http, key, **body)
    return [i["id"] for i in result["data"] if i["source"] == "knowledge"]


class TestDiversity:
    async def test_near_copies_and_exact_copies_never_fill_two_slots(
        self, http: httpx.AsyncClient, tenant: TenantHandle
    ) -> None:
        """Copies coexist when the gate could not see one from the other: the searcher's own owner-visible
        articles (say, graduated from its memories) and a peer's tenant-visible ones."""
        me, peer = await tenant.agent(), await tenant.agent()
        near_a = await propose(http, me, 201, title="Proxy reset fix", body=PROXY_FIX, visibility="owner")
        near_b = await propose(http, peer, 201, title="Proxy reset fix", body=PROXY_FIX_COPY)
        exact_a = await propose(http, me, 201, title="Runner allowlist", body=ALLOWLIST, visibility="owner")
        exact_b = await propose(http, peer, 201, title="Runner allowlist", body=ALLOWLIST)
        for title, body in OTHERS:
            await propose(http, peer, 201, title=title, body=body)
        near = {near_a["article"]["id"], near_b["article"]["id"]}
        exact = {exact_a["article"]["id"], exact_b["article"]["id"]}
        result = await recall_context(http, me, query="CI and the corporate proxy", limit=4)
        got = {i["id"] for i in result["data"] if i["source"] == "knowledge"}
        assert len(got) == 4  # every drop is refilled from the pool
        assert len(near & got) <= 1
        assert len(exact & got) <= 1
        diversity = result["meta"]["diversity"]
        assert diversity["dropped_exact_duplicates"] == 1
        assert diversity["selected"] == 4
        assert diversity["vectors_available"] == diversity["candidates"]
        # Plain search only demotes what the selection did not pick; the pool is still all there.
        found = (
            await http.post(
                "/api/v1/knowledge/search",
                json={"query": "CI and the corporate proxy", "limit": 4},
                headers=bearer(me),
            )
        ).json()
        assert len(near & {h["id"] for h in found["data"]}) <= 1

    async def test_a_session_refills_with_unseen_rows_then_readmits_when_exhausted(
        self, http: httpx.AsyncClient, tenant: TenantHandle
    ) -> None:
        key = await tenant.agent()
        await seed(http, key)
        body = {"query": "engineering practices", "limit": 2, "session_id": "session-1"}
        first = await knowledge_ids(http, key, **body)
        assert len(first) == 2
        second_result = await recall_context(http, key, **body)
        second = [i["id"] for i in second_result["data"] if i["source"] == "knowledge"]
        assert len(second) == 2
        assert not set(first) & set(second)
        assert second_result["meta"]["diversity"]["dropped_already_seen"] == 2
        third = await knowledge_ids(http, key, **body)
        assert len(third) == 2
        assert not (set(first) | set(second)) & set(third)
        # The pool (6 articles) is exhausted after three calls: repeats come back instead of an empty half.
        fourth = await recall_context(http, key, **body)
        readmitted = [i["id"] for i in fourth["data"] if i["source"] == "knowledge"]
        assert len(readmitted) == 2
        assert fourth["meta"]["diversity"]["readmitted_already_seen"] == 2
        # No session: no containment.
        assert await knowledge_ids(http, key, query="engineering practices", limit=2) == first

    async def test_another_agents_session_id_changes_nothing(
        self, http: httpx.AsyncClient, tenant: TenantHandle
    ) -> None:
        key = await tenant.agent()
        await seed(http, key)
        other = await tenant.agent()
        body = {"query": "engineering practices", "limit": 2, "session_id": "shared-token"}
        baseline = await knowledge_ids(http, key, query="engineering practices", limit=2)
        for _ in range(3):
            await recall_context(http, other, **body)
        mine = await recall_context(http, key, **body)
        assert [i["id"] for i in mine["data"] if i["source"] == "knowledge"] == baseline
        assert mine["meta"]["diversity"]["dropped_already_seen"] == 0
