"""The third funnel stage: `POST /api/v1/recall/{recall_id}/referenced` and `GET /api/v1/recall/metrics`.
Only what a recall surfaced in the caller's tenant is accepted; anything else fails the whole call and
writes nothing; repeats never move the rate; referenced rows feed no ranking."""

import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg
import httpx

from cairn_contracts import limits
from cairn_devstack.cairn import CairnStack
from conftest import TenantHandle, bearer
from tests.e2e.test_knowledge import propose, seed
from tests.e2e.test_merged_recall import recall_context
from tests.e2e.test_spine import assert_envelope

NewTenant = Callable[[], Awaitable[TenantHandle]]


async def referenced(
    http: httpx.AsyncClient, key: str, recall_id: str, article_ids: Any, status: int = 200
) -> dict[str, Any]:
    response = await http.post(
        f"/api/v1/recall/{recall_id}/referenced", json={"article_ids": article_ids}, headers=bearer(key)
    )
    assert response.status_code == status, response.text
    result: dict[str, Any] = response.json()
    return result


async def metrics(http: httpx.AsyncClient, headers: dict[str, str]) -> dict[str, Any]:
    response = await http.get("/api/v1/recall/metrics", headers=headers)
    assert response.status_code == 200, response.text
    data: dict[str, Any] = response.json()["data"]
    return data


async def event_rows(stack: CairnStack, tenant_id: str) -> list[tuple[str, str, str]]:
    conn = await asyncpg.connect(stack.database_url)
    try:
        rows = await conn.fetch(
            "SELECT access_type, origin_search_id::text, article_id::text FROM article_access_events "
            "WHERE tenant_id = $1 ORDER BY id",
            uuid.UUID(tenant_id),
        )
    finally:
        await conn.close()
    return [(r[0], r[1], r[2]) for r in rows]


async def surfaced_recall(http: httpx.AsyncClient, key: str) -> tuple[str, list[str]]:
    result = await recall_context(http, key, query="staging database and deployments", limit=4)
    ids = [i["id"] for i in result["data"] if i["source"] == "knowledge"]
    assert len(ids) >= 2
    return result["meta"]["recall_id"], ids


SUBJECTS = ["otters", "cranes", "ferries", "tides", "lanterns", "nets", "gulls", "barges", "anchors", "buoys"]
VERBS = ["inspected", "painted", "counted", "repaired", "photographed"]
PLACES = [
    "Oslo",
    "Lisbon",
    "Genoa",
    "Hamburg",
    "Valparaiso",
    "Busan",
    "Durban",
    "Halifax",
    "Perth",
    "Tallinn",
]
TIMES = ["at dawn", "every winter", "after storms", "on Fridays", "during audits"]


def varied_body(i: int) -> str:
    """Fifty harbour notes about different things (the gate would draft near-identical ones)."""
    return (
        f"In the harbour of {PLACES[i % 10]}, the {SUBJECTS[(i * 3 + i // 10) % 10]} are {VERBS[i % 5]} "
        f"{TIMES[(i // 10) % 5]} by team {i}; budget code H-{1000 + i * 37}."
    )


class TestReferenced:
    async def test_recall_records_surfaced_rows_under_its_recall_id(
        self, http: httpx.AsyncClient, tenant: TenantHandle, stack: CairnStack
    ) -> None:
        key = await tenant.agent()
        await seed(http, key)
        recall_id, ids = await surfaced_recall(http, key)
        rows = await event_rows(stack, tenant.id)
        assert sorted(rows) == sorted(("surfaced", recall_id, a) for a in ids)

    async def test_referencing_surfaced_articles_records_them_once(
        self, http: httpx.AsyncClient, tenant: TenantHandle, stack: CairnStack
    ) -> None:
        key = await tenant.agent()
        await seed(http, key)
        recall_id, ids = await surfaced_recall(http, key)
        first = await referenced(http, key, recall_id, ids[:1])
        assert first["data"] == {"recall_id": recall_id, "article_ids": ids[:1], "recorded": 1}
        tenant_key = await tenant.key("user")
        before = await metrics(http, bearer(tenant_key))
        assert before["surfaced"] == len(ids)
        assert before["referenced"] == 1
        assert before["reference_rate"] == 1 / len(ids)
        again = await referenced(http, key, recall_id, [ids[0], ids[0]])
        assert again["data"]["recorded"] == 0
        assert await metrics(http, bearer(tenant_key)) == before  # reposting cannot move the rate
        both = await referenced(http, key, recall_id, ids[:2])
        assert both["data"]["recorded"] == 1
        rows = await event_rows(stack, tenant.id)
        assert sorted(r for r in rows if r[0] == "referenced") == sorted(
            ("referenced", recall_id, a) for a in ids[:2]
        )

    async def test_anything_not_surfaced_fails_the_whole_call_and_writes_nothing(
        self, http: httpx.AsyncClient, tenant: TenantHandle, new_tenant: NewTenant, stack: CairnStack
    ) -> None:
        key = await tenant.agent()
        await seed(http, key)
        recall_id, ids = await surfaced_recall(http, key)
        extra = (await propose(http, key, 201, title="Unrelated", body="Nothing about that query."))[
            "article"
        ]["id"]
        other_recall, _ = await surfaced_recall(http, key)
        before = await event_rows(stack, tenant.id)
        memory_id = (
            await http.post("/api/v1/memory", json={"text": "a memory, not an article"}, headers=bearer(key))
        ).json()["data"]["id"]
        for bad in (
            [ids[0], extra],  # one good id does not carry a bad one
            [memory_id],  # a memory item's id is not an article
            [str(uuid.uuid4())],
        ):
            result = await referenced(http, key, recall_id, bad, status=422)
            assert result["error"]["code"] == "not_surfaced"
        unknown = await referenced(http, key, str(uuid.uuid4()), ids[:1], status=422)
        assert unknown["error"]["code"] == "not_surfaced"
        # Another tenant's key cannot reference this recall: it surfaced nothing in that tenant.
        stranger = await (await new_tenant()).agent()
        foreign = await referenced(http, stranger, recall_id, ids[:1], status=422)
        assert foreign["error"]["code"] == "not_surfaced"
        assert await event_rows(stack, tenant.id) == before
        assert other_recall != recall_id

    async def test_validation_codes_and_the_id_limit(
        self, http: httpx.AsyncClient, tenant: TenantHandle
    ) -> None:
        key = await tenant.agent()
        recall_id = str(uuid.uuid4())
        assert (await referenced(http, key, "not-a-recall", [str(uuid.uuid4())], 422))["error"][
            "code"
        ] == "invalid_recall_id"
        for bad in ([], "x", None, [5], ["nope"], {"a": 1}):
            result = await referenced(http, key, recall_id, bad, 422)
            assert result["error"]["code"] == "invalid_article_ids", bad
        cap = limits.REFERENCED_IDS_MAX
        at_cap = await referenced(http, key, recall_id, [str(uuid.uuid4()) for _ in range(cap)], 422)
        assert at_cap["error"]["code"] == "not_surfaced"  # 50 ids are accepted for checking
        over = await referenced(http, key, recall_id, [str(uuid.uuid4()) for _ in range(cap + 1)], 422)
        assert over["error"]["code"] == "too_many_article_ids"
        missing = await http.post(f"/api/v1/recall/{recall_id}/referenced", json={}, headers=bearer(key))
        assert missing.status_code == 422

    async def test_fifty_surfaced_articles_can_be_referenced_in_one_call(
        self, http: httpx.AsyncClient, tenant: TenantHandle
    ) -> None:
        key = await tenant.agent()
        for i in range(limits.RECALL_LIMIT_MAX):
            result = await propose(http, key, title=f"Harbour note {i}", body=varied_body(i))
            assert result["verdict"] == "created", result
        result = await recall_context(http, key, query="harbour", limit=limits.RECALL_LIMIT_MAX)
        ids = [i["id"] for i in result["data"] if i["source"] == "knowledge"]
        assert len(ids) == limits.REFERENCED_IDS_MAX
        done = await referenced(http, key, result["meta"]["recall_id"], ids)
        assert done["data"]["recorded"] == limits.REFERENCED_IDS_MAX


class TestMetrics:
    async def test_metrics_are_per_tenant_and_start_empty(
        self, http: httpx.AsyncClient, tenant: TenantHandle, new_tenant: NewTenant, admin_key: str
    ) -> None:
        key = await tenant.agent()
        await seed(http, key)
        recall_id, ids = await surfaced_recall(http, key)
        await referenced(http, key, recall_id, ids[:1])
        as_admin = bearer(admin_key, **{"X-Impersonate-Tenant": tenant.id})
        mine = await metrics(http, as_admin)
        assert (mine["tenant_id"], mine["surfaced"], mine["referenced"]) == (tenant.id, len(ids), 1)
        other = await new_tenant()
        empty = await metrics(http, bearer(await other.agent()))
        assert empty == {"tenant_id": other.id, "surfaced": 0, "referenced": 0, "reference_rate": None}
        assert_envelope(
            await http.get("/api/v1/recall/metrics", headers=bearer(admin_key)),
            422,
            "impersonation_tenant_required",
        )

    async def test_referenced_rows_never_feed_ranking(
        self, http: httpx.AsyncClient, tenant: TenantHandle
    ) -> None:
        key = await tenant.agent()
        await seed(http, key)
        body = {"query": "staging database and deployments", "limit": 4}
        before = await recall_context(http, key, **body)
        ids = [i["id"] for i in before["data"] if i["source"] == "knowledge"]
        for _ in range(3):
            await referenced(http, key, before["meta"]["recall_id"], ids[-1:])
            again = await recall_context(http, key, **body)
            await referenced(http, key, again["meta"]["recall_id"], ids[-1:])
        after = await recall_context(http, key, **body)
        assert after["data"] == before["data"]
