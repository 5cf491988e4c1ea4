"""Knowledge through the gateway: every novelty-gate verdict, the race, gate_unavailable, validation at
every limit's edge, hybrid search (chunks, modes, curated pin, fallback, partitions), list, oversight."""

import asyncio
import json
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg
import httpx

from cairn_contracts import limits
from cairn_devstack.cairn import CairnStack
from conftest import TenantHandle, bearer
from tests.e2e.test_spine import assert_envelope

NewTenant = Callable[[], Awaitable[TenantHandle]]

ARTICLES = [
    ("Deploy checklist", "Deployments happen on Tuesdays after the standup; freeze the main branch first."),
    ("Staging database", "The staging database is PostgreSQL 16 and listens on port 6543 behind pgbouncer."),
    ("CI proxy resets", "Our CI pipeline fails with ERR_CONN_RESET whenever the corporate proxy restarts."),
    ("Incident paging", "Page the on-call engineer through PagerDuty; escalate after fifteen minutes."),
    ("Code review rules", "Every change needs one approving review; large diffs are split before review."),
    ("Release notes", "Release notes are drafted from merged pull request titles every Friday."),
]


async def propose(
    http: httpx.AsyncClient, key: str, status: int | None = None, **body: Any
) -> dict[str, Any]:
    response = await http.post("/api/v1/knowledge", json=body, headers=bearer(key))
    if status is not None:
        assert response.status_code == status, response.text
    else:
        assert response.status_code in (200, 201), response.text
    data: dict[str, Any] = response.json()["data"]
    return data


async def search(http: httpx.AsyncClient, key: str, **body: Any) -> dict[str, Any]:
    response = await http.post("/api/v1/knowledge/search", json=body, headers=bearer(key))
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


async def listed(http: httpx.AsyncClient, key: str, **params: Any) -> dict[str, Any]:
    response = await http.get("/api/v1/knowledge", params=params, headers=bearer(key))
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


async def seed(http: httpx.AsyncClient, key: str, articles: list[tuple[str, str]] = ARTICLES) -> list[str]:
    ids = []
    for title, body in articles:
        ids.append((await propose(http, key, 201, title=title, body=body))["article"]["id"])
    return ids


async def set_embedding_provider_without_key(http: httpx.AsyncClient, admin_key: str, tenant_id: str) -> None:
    """A tenant provider with no key: every embedding for that tenant (only) is unavailable."""
    body = {"embedding": {"base_url": "http://127.0.0.1:9/v1", "model": "fake"}}
    r = await http.put(f"/api/v1/tenants/{tenant_id}/providers", json=body, headers=bearer(admin_key))
    assert r.status_code == 200, r.text
    await asyncio.sleep(1.2)  # the provider cache TTL in tests


class TestNoveltyGate:
    async def test_a_novel_proposal_is_created_published_and_tenant_visible(
        self, http: httpx.AsyncClient, tenant: TenantHandle
    ) -> None:
        key = await tenant.agent()
        result = await propose(
            http, key, 201, title="Deploy checklist", body=ARTICLES[0][1], category="ops", tags=["deploy"]
        )
        assert result["verdict"] == "created"
        assert result["created"] is True
        article = result["article"]
        assert article["status"] == "published"
        assert article["visibility"] == "tenant"
        assert article["owner_subject_id"] is None
        assert article["source"] == "agent"
        assert article["category"] == "ops"
        assert article["tags"] == ["deploy"]
        assert article["created_by"]
        got = (await http.get(f"/api/v1/knowledge/{article['id']}", headers=bearer(key))).json()["data"]
        assert got["body"] == ARTICLES[0][1]

    async def test_the_same_body_is_a_duplicate_and_creates_nothing(
        self, http: httpx.AsyncClient, tenant: TenantHandle
    ) -> None:
        key = await tenant.agent()
        first = await propose(http, key, 201, title="Deploy checklist", body=ARTICLES[0][1])
        other = await tenant.agent()
        again = await propose(http, other, 200, title="Another title", body=ARTICLES[0][1])
        assert again["verdict"] == "duplicate"
        assert again["created"] is False
        assert again["article"]["id"] == first["article"]["id"]
        assert (await listed(http, key))["meta"]["total_count"] == 1

    async def test_the_same_title_is_deduplicated_case_insensitively(
        self, http: httpx.AsyncClient, tenant: TenantHandle
    ) -> None:
        key = await tenant.agent()
        first = await propose(http, key, 201, title="Deploy checklist", body=ARTICLES[0][1])
        again = await propose(http, await tenant.agent(), 200, title="  deploy CHECKLIST ", body="Other text")
        assert again["verdict"] == "deduplicated"
        assert again["created"] is False
        assert again["article"]["id"] == first["article"]["id"]
        assert (await listed(http, key))["meta"]["total_count"] == 1

    async def test_a_near_duplicate_becomes_a_draft_only_its_proposer_sees(
        self, http: httpx.AsyncClient, tenant: TenantHandle
    ) -> None:
        key = await tenant.agent()
        await seed(http, key)
        proposer = await tenant.agent()
        near = ARTICLES[1][1].replace("listens on", "is listening on")
        result = await propose(http, proposer, 201, title="Staging database notes", body=near)
        assert result["verdict"] == "gated_to_draft"
        assert result["created"] is True
        draft = result["article"]
        assert draft["status"] == "draft"
        mine = await http.get(f"/api/v1/knowledge/{draft['id']}", headers=bearer(proposer))
        assert mine.status_code == 200
        assert draft["id"] in [a["id"] for a in (await listed(http, proposer))["data"]]
        assert_envelope(
            await http.get(f"/api/v1/knowledge/{draft['id']}", headers=bearer(key)), 404, "not_found"
        )
        assert draft["id"] not in [a["id"] for a in (await listed(http, key))["data"]]
        found = await search(http, proposer, query="staging database port", limit=10)
        assert draft["id"] not in [h["id"] for h in found["data"]]
        # The draft is still the proposer's: proposing it again is a duplicate of the draft.
        again = await propose(http, proposer, 200, title="Staging DB port (again)", body=near)
        assert (again["verdict"], again["article"]["id"]) == ("duplicate", draft["id"])

    async def test_the_near_duplicate_threshold_is_not_crossed_by_a_different_article(
        self, http: httpx.AsyncClient, tenant: TenantHandle
    ) -> None:
        key = await tenant.agent()
        await seed(http, key)
        result = await propose(
            http, key, 201, title="Vacation policy", body="Employees get 25 days of paid vacation per year."
        )
        assert result["verdict"] == "created"

    async def test_an_owner_title_neither_blocks_nor_reveals_anything_to_another_subject(
        self, http: httpx.AsyncClient, tenant: TenantHandle
    ) -> None:
        alice, bob = await tenant.agent(), await tenant.agent()
        private = await propose(
            http, alice, 201, title="My notes", body="Alice keeps her notes here.", visibility="owner"
        )
        assert private["article"]["visibility"] == "owner"
        assert private["article"]["owner_subject_id"]
        mine = await propose(
            http, bob, 201, title="My notes", body="Bob keeps other notes.", visibility="owner"
        )
        assert mine["verdict"] == "created"
        shared = await propose(http, bob, 201, title="My notes", body="A shared page of notes for everyone.")
        assert shared["verdict"] == "created"
        # Alice's own second owner article with her title is deduplicated to hers, never to Bob's.
        again = await propose(http, alice, 200, title="MY NOTES", body="Different words.", visibility="owner")
        assert (again["verdict"], again["article"]["id"]) == ("deduplicated", private["article"]["id"])

    async def test_concurrent_identical_proposals_produce_exactly_one_article(
        self, http: httpx.AsyncClient, tenant: TenantHandle
    ) -> None:
        keys = [await tenant.agent() for _ in range(6)]
        body = {"title": "Race", "body": "Two agents learned the same fact at the same moment."}
        responses = await asyncio.gather(
            *(http.post("/api/v1/knowledge", json=body, headers=bearer(k)) for k in keys)
        )
        assert sorted(r.status_code for r in responses) == [200] * 5 + [201], [r.text for r in responses]
        results = [r.json()["data"] for r in responses]
        assert len({r["article"]["id"] for r in results}) == 1
        assert sum(r["created"] for r in results) == 1
        assert {r["verdict"] for r in results if not r["created"]} <= {"duplicate", "deduplicated"}
        assert (await listed(http, keys[0]))["meta"]["total_count"] == 1

    async def test_gate_unavailable_writes_nothing(
        self, http: httpx.AsyncClient, tenant: TenantHandle, admin_key: str
    ) -> None:
        key = await tenant.agent()
        await set_embedding_provider_without_key(http, admin_key, tenant.id)
        response = await http.post(
            "/api/v1/knowledge", json={"title": "Novel", "body": "Something new."}, headers=bearer(key)
        )
        assert_envelope(response, 503, "gate_unavailable")
        assert (await listed(http, key))["meta"]["total_count"] == 0

    async def test_project_id_is_tenant_validated_on_write(
        self, http: httpx.AsyncClient, tenant: TenantHandle, new_tenant: NewTenant
    ) -> None:
        key = await tenant.agent()
        for bad in ("not-a-uuid", str(uuid.uuid4())):
            response = await http.post(
                "/api/v1/knowledge", json={"title": "P", "body": "B", "project_id": bad}, headers=bearer(key)
            )
            assert_envelope(response, 422, "invalid_project_id")
        assert (await listed(http, key))["meta"]["total_count"] == 0


class TestValidation:
    async def test_body_at_and_past_its_limit(self, http: httpx.AsyncClient, tenant: TenantHandle) -> None:
        key = await tenant.agent()
        cap = limits.ARTICLE_BODY_MAX_BYTES
        at = await propose(http, key, 201, title="Big", body="word " * (cap // 5 - 1) + "end.")
        assert at["verdict"] == "created"
        over = await http.post(
            "/api/v1/knowledge", json={"title": "Bigger", "body": "é" * (cap // 2) + "x"}, headers=bearer(key)
        )
        assert_envelope(over, 422, "content_too_large")

    async def test_title_at_and_past_its_limit(self, http: httpx.AsyncClient, tenant: TenantHandle) -> None:
        key = await tenant.agent()
        cap = limits.ARTICLE_TITLE_MAX_CHARS
        await propose(http, key, 201, title="t" * cap, body="b")
        over = await http.post(
            "/api/v1/knowledge", json={"title": "t" * (cap + 1), "body": "b"}, headers=bearer(key)
        )
        assert_envelope(over, 422, "validation_error")

    async def test_bad_bodies_are_422_and_write_nothing(
        self, http: httpx.AsyncClient, tenant: TenantHandle
    ) -> None:
        key = await tenant.agent()
        bad = [
            {"title": "", "body": "b"},
            {"title": "   ", "body": "b"},
            {"title": "t", "body": " \n "},
            {"title": "t"},
            {"title": 5, "body": "b"},
            {"title": "t", "body": "b", "visibility": "everyone"},
            {"title": "t", "body": "b", "tags": ["x"] * (limits.TAGS_MAX + 1)},
            {"title": "t", "body": "b", "tags": ["x" * (limits.TAG_MAX_CHARS + 1)]},
            {"title": "t", "body": "b", "category": "c" * (limits.ARTICLE_CATEGORY_MAX_CHARS + 1)},
            {"title": "nul\u0000", "body": "b"},
            {"title": "t", "body": "nul\u0000"},
            {"title": "t", "body": "b", "tags": ["nul\u0000"]},
        ]
        for body in bad:
            assert_envelope(
                await http.post("/api/v1/knowledge", json=body, headers=bearer(key)), 422, "validation_error"
            )
        for raw in ('{"title": "t", "body": "\\ud800"}', '{"title": "\\udfff", "body": "b"}'):
            response = await http.post(
                "/api/v1/knowledge",
                content=raw.encode(),
                headers={**bearer(key), "Content-Type": "application/json"},
            )
            assert response.status_code == 422, response.text
        assert (await listed(http, key))["meta"]["total_count"] == 0

    async def test_search_query_validation(self, http: httpx.AsyncClient, tenant: TenantHandle) -> None:
        key = await tenant.agent()
        for query in ("", "   ", None, 5, ["q"]):
            response = await http.post("/api/v1/knowledge/search", json={"query": query}, headers=bearer(key))
            assert_envelope(response, 422, "invalid_query")
        assert_envelope(
            await http.post("/api/v1/knowledge/search", json={}, headers=bearer(key)), 422, "invalid_query"
        )
        cap = limits.QUERY_MAX_CHARS
        await search(http, key, query="q" * cap)
        response = await http.post(
            "/api/v1/knowledge/search", json={"query": "q" * (cap + 1)}, headers=bearer(key)
        )
        assert_envelope(response, 422, "query_too_long")
        response = await http.post(
            "/api/v1/knowledge/search", json={"query": "a\u0000b"}, headers=bearer(key)
        )
        assert response.status_code == 422
        raw = '{"query": "\\ud800 lone"}'
        response = await http.post(
            "/api/v1/knowledge/search",
            content=raw.encode(),
            headers={**bearer(key), "Content-Type": "application/json"},
        )
        assert response.status_code == 422, response.text
        await search(http, key, query="q", limit=limits.RECALL_LIMIT_MAX)
        for limit in (0, limits.RECALL_LIMIT_MAX + 1, "x"):
            response = await http.post(
                "/api/v1/knowledge/search", json={"query": "q", "limit": limit}, headers=bearer(key)
            )
            assert_envelope(response, 422, "validation_error")
        response = await http.post(
            "/api/v1/knowledge/search", json={"query": "q", "mode": "magic"}, headers=bearer(key)
        )
        assert_envelope(response, 422, "validation_error")

    async def test_malformed_ids_are_404(self, http: httpx.AsyncClient, tenant: TenantHandle) -> None:
        key = await tenant.agent()
        for article_id in ("nope", str(uuid.uuid4())):
            assert_envelope(
                await http.get(f"/api/v1/knowledge/{article_id}", headers=bearer(key)), 404, "not_found"
            )


class TestSearch:
    async def test_hybrid_search_ranks_the_matching_article_first_with_its_meta(
        self, http: httpx.AsyncClient, tenant: TenantHandle
    ) -> None:
        key = await tenant.agent()
        ids = await seed(http, key)
        result = await search(http, key, query="ERR_CONN_RESET in the CI pipeline", limit=3)
        assert result["data"][0]["id"] == ids[2]
        top = result["data"][0]
        assert set(top) >= {"id", "title", "category", "tags", "score", "snippet", "selection_reason"}
        assert top["selection_reason"] == "keyword+semantic"
        assert 0 < top["score"] <= 1
        assert top["snippet"].startswith("Our CI pipeline")
        meta = result["meta"]
        assert meta["fallback"] is False
        assert meta["reason"] is None
        assert meta["provenance"] == "search"
        assert meta["confidence"] == top["score"]
        assert meta["answer_confidence"] in ("answer", "weak")
        assert meta["diversity"]["mode"] == "reorder"
        assert meta["diversity"]["candidates"] == meta["candidates"] >= 3
        assert meta["diversity"]["mmr_lambda"] == 0.7
        assert meta["diversity"]["near_dup_threshold"] == 0.95
        assert len(result["data"]) == 3
        assert meta["limit"] == 3
        assert meta["strategy"] == "ann"  # tests force the ANN path above 5 articles
        assert meta["ann_iterative_scan"] in ("applied", "off", "unavailable")

    async def test_modes_tag_their_selection_reason(
        self, http: httpx.AsyncClient, tenant: TenantHandle
    ) -> None:
        key = await tenant.agent()
        await seed(http, key)
        keyword = await search(http, key, query="pgbouncer", mode="keyword")
        assert [h["title"] for h in keyword["data"]] == ["Staging database"]
        assert keyword["data"][0]["selection_reason"] == "keyword"
        assert "ann_iterative_scan" not in keyword["meta"]
        semantic = await search(http, key, query="which port does the staging database use", mode="semantic")
        assert semantic["data"][0]["title"] == "Staging database"
        assert {h["selection_reason"] for h in semantic["data"]} == {"semantic"}

    async def test_any_term_keyword_matching(self, http: httpx.AsyncClient, tenant: TenantHandle) -> None:
        key = await tenant.agent()
        await seed(http, key)
        result = await search(http, key, query="pgbouncer zeppelin", mode="keyword")
        assert [h["title"] for h in result["data"]] == ["Staging database"]

    async def test_a_word_only_the_callers_own_article_holds_still_matches(
        self, http: httpx.AsyncClient, tenant: TenantHandle
    ) -> None:
        """The keyword side's term counts cover shared articles only (no count reflects another subject's
        owner article), so a word that no shared article holds must still match the caller's own one,
        and only the caller's."""
        owner, other = await tenant.agent("owner"), await tenant.agent("other")
        await seed(http, owner)
        body = "My quokkafish tank needs its filter rinsed every ninth day."
        mine = (await propose(http, owner, 201, title="Tank notes", body=body, visibility="owner"))["article"]
        for query in ("quokkafish", "quokkafish staging database"):
            found = await search(http, owner, query=query, mode="keyword")
            assert mine["id"] in {h["id"] for h in found["data"]}, query
            assert mine["id"] not in {h["id"] for h in (await search(http, other, query=query))["data"]}

    async def test_an_exact_title_is_the_curated_answer_pinned_first(
        self, http: httpx.AsyncClient, tenant: TenantHandle
    ) -> None:
        key = await tenant.agent()
        await seed(http, key)
        result = await search(http, key, query="incident PAGING")
        assert result["data"][0]["title"] == "Incident paging"
        assert result["meta"]["provenance"] == "curated"

    async def test_a_fact_deep_in_a_long_article_is_found_by_its_chunk(
        self, http: httpx.AsyncClient, tenant: TenantHandle
    ) -> None:
        key = await tenant.agent()
        await seed(http, key)
        filler = " ".join(
            f"Section {i} describes routine office logistics and meeting rooms." for i in range(80)
        )
        body = filler + " The emergency generator in the basement is tested every first Monday at 7am."
        long_id = (await propose(http, key, 201, title="Facilities handbook", body=body))["article"]["id"]
        result = await search(
            http, key, query="when is the basement emergency generator tested", mode="semantic"
        )
        assert result["data"][0]["id"] == long_id

    async def test_embedder_down_falls_back_to_keywords(
        self, http: httpx.AsyncClient, tenant: TenantHandle, admin_key: str
    ) -> None:
        key = await tenant.agent()
        await seed(http, key)
        await set_embedding_provider_without_key(http, admin_key, tenant.id)
        result = await search(http, key, query="staging database port")
        assert result["meta"]["fallback"] is True
        assert result["meta"]["reason"] == "embedder_no_api_key"
        assert result["meta"]["strategy"] == "keyword"
        assert "ann_iterative_scan" not in result["meta"]
        assert result["data"][0]["title"] == "Staging database"
        assert {h["selection_reason"] for h in result["data"]} == {"keyword_fallback"}
        nothing_indexable = await search(http, key, query="the")
        assert nothing_indexable["meta"]["fallback"] is True
        assert all(
            h["selection_reason"] == "unscored" and h["score"] is None for h in nothing_indexable["data"]
        )

    async def test_an_empty_knowledge_base_says_none(
        self, http: httpx.AsyncClient, tenant: TenantHandle
    ) -> None:
        result = await search(http, await tenant.agent(), query="anything at all")
        assert result["data"] == []
        assert result["meta"]["provenance"] == "none"
        assert result["meta"]["answer_confidence"] == "none"
        assert result["meta"]["fallback"] is False
        assert result["meta"]["underfilled"] is True

    async def test_project_partition_is_global_plus_the_active_project(
        self, http: httpx.AsyncClient, tenant: TenantHandle, admin_key: str
    ) -> None:
        key = await tenant.agent()
        projects = []
        for slug in ("alpha", "beta"):
            r = await http.post("/api/v1/projects", json={"name": slug, "slug": slug}, headers=bearer(key))
            assert r.status_code == 201, r.text
            projects.append(r.json()["data"]["id"])
        await propose(http, key, 201, title="Global runbook", body="The shared runbook for rollbacks.")
        await propose(
            http,
            key,
            201,
            title="Alpha runbook",
            body="Alpha rollbacks use blue-green.",
            project_id=projects[0],
        )
        await propose(
            http, key, 201, title="Beta runbook", body="Beta rollbacks use canaries.", project_id=projects[1]
        )
        glob = {h["title"] for h in (await search(http, key, query="runbook rollbacks"))["data"]}
        assert glob == {"Global runbook"}
        alpha = {
            h["title"]
            for h in (await search(http, key, query="runbook rollbacks", project_id=projects[0]))["data"]
        }
        assert alpha == {"Global runbook", "Alpha runbook"}
        stray = {
            h["title"]
            for h in (await search(http, key, query="runbook rollbacks", project_id=str(uuid.uuid4())))[
                "data"
            ]
        }
        assert stray == {"Global runbook"}
        only_alpha = await listed(http, key, project_id=projects[0])
        assert [a["title"] for a in only_alpha["data"]] == ["Alpha runbook"]


class TestListAndOversight:
    async def test_list_pages_and_filters(self, http: httpx.AsyncClient, tenant: TenantHandle) -> None:
        key = await tenant.agent()
        await propose(http, key, 201, title="A", body="alpha text", category="ops", tags=["x"])
        await propose(http, key, 201, title="B", body="beta words", category="dev", tags=["y"])
        await propose(http, key, 201, title="C", body="gamma stuff", category="ops", visibility="owner")
        page = await listed(http, key, limit=2)
        assert page["meta"] == {"total_count": 3, "limit": 2, "offset": 0}
        assert [a["title"] for a in page["data"]] == ["C", "B"]
        assert all(a["body"] is None for a in page["data"])
        assert [a["title"] for a in (await listed(http, key, limit=2, offset=2))["data"]] == ["A"]
        assert {a["title"] for a in (await listed(http, key, category="ops"))["data"]} == {"A", "C"}
        assert [a["title"] for a in (await listed(http, key, tag="y"))["data"]] == ["B"]
        assert [a["title"] for a in (await listed(http, key, visibility="owner"))["data"]] == ["C"]
        assert (await listed(http, key, status="draft"))["meta"]["total_count"] == 0
        for params in ({"limit": 0}, {"limit": limits.LIST_LIMIT_MAX + 1}, {"offset": -1}, {"status": "x"}):
            response = await http.get("/api/v1/knowledge", params=params, headers=bearer(key))
            assert_envelope(response, 422, "validation_error")
        assert (await listed(http, key, limit=limits.LIST_LIMIT_MAX))["meta"][
            "limit"
        ] == limits.LIST_LIMIT_MAX

    async def test_superadmin_lists_and_deletes_any_article_of_the_impersonated_tenant(
        self, http: httpx.AsyncClient, tenant: TenantHandle, new_tenant: NewTenant, admin_key: str
    ) -> None:
        alice, bob = await tenant.agent(), await tenant.agent()
        private = (await propose(http, alice, 201, title="Private", body="mine only", visibility="owner"))[
            "article"
        ]
        await seed(http, bob, ARTICLES[:2])
        draft = (
            await propose(
                http,
                alice,
                201,
                title="Staging database notes",
                body=ARTICLES[1][1].replace("listens on", "is listening on"),
            )
        )["article"]
        assert draft["status"] == "draft"
        as_admin = bearer(admin_key, **{"X-Impersonate-Tenant": tenant.id})
        every = (
            await http.get("/api/v1/knowledge", params={"all_subjects": "true"}, headers=as_admin)
        ).json()
        assert every["meta"]["total_count"] == 4
        own_only = (await listed(http, bob, all_subjects="true"))["meta"]["total_count"]
        assert own_only == 2  # all_subjects is ignored for agents: drafts and owner articles stay hidden
        assert_envelope(
            await http.delete(f"/api/v1/knowledge/{private['id']}", headers=bearer(alice)), 403, "forbidden"
        )
        deleted = await http.delete(f"/api/v1/knowledge/{private['id']}", headers=as_admin)
        assert deleted.status_code == 200, deleted.text
        assert_envelope(
            await http.get(f"/api/v1/knowledge/{private['id']}", headers=bearer(alice)), 404, "not_found"
        )
        other = await new_tenant()
        as_other = bearer(admin_key, **{"X-Impersonate-Tenant": other.id})
        assert_envelope(
            await http.delete(f"/api/v1/knowledge/{draft['id']}", headers=as_other), 404, "not_found"
        )
        listing = await http.get(
            "/api/v1/knowledge", params={"all_subjects": "true"}, headers=bearer(admin_key)
        )
        assert_envelope(listing, 422, "impersonation_tenant_required")

    async def test_openapi_documents_the_knowledge_and_recall_paths(self, http: httpx.AsyncClient) -> None:
        paths = json.loads((await http.get("/openapi.json")).text)["paths"]
        for path in (
            "/api/v1/knowledge",
            "/api/v1/knowledge/{article_id}",
            "/api/v1/knowledge/search",
            "/api/v1/recall",
            "/api/v1/recall/{recall_id}/referenced",
            "/api/v1/recall/metrics",
        ):
            assert path in paths


class TestSearchAfterWrites:
    """Semantic search scores small tenants from each replica's copy of their vectors
    (cairn_knowledge.vector_cache): a search must still see every write committed before it."""

    async def test_a_search_sees_each_write_committed_before_it(
        self, http: httpx.AsyncClient, stack: CairnStack, tenant: TenantHandle, admin_key: str
    ) -> None:
        key = await tenant.agent()
        await seed(http, key, ARTICLES[:4])

        def titles(result: dict[str, Any]) -> list[str]:
            assert result["meta"]["strategy"] == "exact"
            return [hit["title"] for hit in result["data"]]

        query = "which proxy breaks the CI pipeline"
        assert "Incident paging" in titles(await search(http, key, query="who gets paged", mode="semantic"))
        added = await propose(
            http, key, 201, title="Proxy restarts", body="The corporate proxy restarts at 02:00."
        )
        assert titles(await search(http, key, query=query, mode="semantic", limit=2))[0] in (
            "Proxy restarts",
            "CI proxy resets",
        )
        assert "Proxy restarts" in titles(await search(http, key, query=query, mode="semantic", limit=5))
        as_admin = bearer(admin_key, **{"X-Impersonate-Tenant": tenant.id})
        deleted = await http.delete(f"/api/v1/knowledge/{added['article']['id']}", headers=as_admin)
        assert deleted.status_code == 200, deleted.text
        assert "Proxy restarts" not in titles(await search(http, key, query=query, mode="semantic", limit=5))
        # A writer outside the service (an operator's SQL) is seen too: the version moves by trigger.
        conn = await asyncpg.connect(stack.database_url)
        try:
            await conn.execute(
                "UPDATE articles SET status = 'draft' WHERE tenant_id = $1 AND title = 'CI proxy resets'",
                uuid.UUID(tenant.id),
            )
        finally:
            await conn.close()
        assert "CI proxy resets" not in titles(await search(http, key, query=query, mode="semantic", limit=5))
