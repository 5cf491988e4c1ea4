"""The visibility matrix: tenant-published / owner / draft articles x the same subject (through a second,
rotated key) / another subject / another tenant / a superadmin, through GET, list, search and merged recall.
Anything a caller may not see is 404 or absent: never 403, never an existence leak."""

import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import httpx
import pytest

from cairn_contracts import subjects
from cairn_contracts.identity import Role
from cairn_contracts.knowledge import ArticleIdRequest, ListArticlesRequest, VisibleIdsRequest
from cairn_devstack.cairn import CairnStack
from cairn_scope import Scope
from conftest import TenantHandle, bearer
from tests.bus_helpers import ask, signed
from tests.e2e.test_knowledge import listed, propose

NewTenant = Callable[[], Awaitable[TenantHandle]]

QUERY = "lighthouse keeper rota"
SHARED = "The lighthouse keeper rota rotates weekly between the three harbour teams."
PRIVATE = "My lighthouse keeper rota notes: I swap shifts with the harbour master on Sundays."
DRAFT = "The lighthouse keeper rota is rotating weekly between the three harbour teams."


@dataclass
class Matrix:
    tenant: TenantHandle
    owner_agent: str
    shared: str
    private: str
    draft: str


@pytest.fixture
async def matrix(http: httpx.AsyncClient, tenant: TenantHandle) -> Matrix:
    owner = await tenant.agent("keeper")
    shared = (await propose(http, owner, 201, title="Keeper rota", body=SHARED))["article"]
    private = (await propose(http, owner, 201, title="My rota notes", body=PRIVATE, visibility="owner"))[
        "article"
    ]
    draft = await propose(http, owner, 201, title="Keeper rota v2", body=DRAFT)
    assert draft["verdict"] == "gated_to_draft"
    assert (shared["status"], private["status"]) == ("published", "published")
    return Matrix(tenant, "keeper", shared["id"], private["id"], draft["article"]["id"])


async def surfaces(http: httpx.AsyncClient, headers: dict[str, str], m: Matrix) -> dict[str, dict[str, bool]]:
    """For each article: can this caller GET it, list it, find it by search, get it from merged recall?"""
    listed_ids = {
        a["id"]
        for a in (await http.get("/api/v1/knowledge", params={"limit": 100}, headers=headers)).json()["data"]
    }
    found = await http.post("/api/v1/knowledge/search", json={"query": QUERY, "limit": 50}, headers=headers)
    assert found.status_code == 200, found.text
    searched = {h["id"] for h in found.json()["data"]}
    merged = await http.post("/api/v1/recall", json={"query": QUERY, "limit": 50}, headers=headers)
    assert merged.status_code == 200, merged.text
    recalled = {i["id"] for i in merged.json()["data"] if i["source"] == "knowledge"}
    out = {}
    for name, article_id in (("shared", m.shared), ("private", m.private), ("draft", m.draft)):
        got = await http.get(f"/api/v1/knowledge/{article_id}", headers=headers)
        assert got.status_code in (200, 404), got.text  # never 403
        if got.status_code == 404:
            assert got.json()["error"]["code"] == "not_found"
        out[name] = {
            "get": got.status_code == 200,
            "list": article_id in listed_ids,
            "search": article_id in searched,
            "recall": article_id in recalled,
        }
    return out


ALL = {"get": True, "list": True, "search": True, "recall": True}
NONE = {"get": False, "list": False, "search": False, "recall": False}
READ_ONLY = {"get": True, "list": True, "search": False, "recall": False}


class TestVisibilityMatrix:
    async def test_the_same_subject_through_a_rotated_key(
        self, http: httpx.AsyncClient, matrix: Matrix
    ) -> None:
        rotated = await matrix.tenant.agent(matrix.owner_agent)
        assert await surfaces(http, bearer(rotated), matrix) == {
            "shared": ALL,
            "private": ALL,
            "draft": READ_ONLY,  # a draft is seen by its proposer through GET and list, never in search
        }

    async def test_another_subject_of_the_tenant(self, http: httpx.AsyncClient, matrix: Matrix) -> None:
        other = await matrix.tenant.agent("someone-else")
        assert await surfaces(http, bearer(other), matrix) == {"shared": ALL, "private": NONE, "draft": NONE}

    async def test_a_user_key_of_the_tenant(self, http: httpx.AsyncClient, matrix: Matrix) -> None:
        user = await matrix.tenant.key("user")
        assert await surfaces(http, bearer(user), matrix) == {"shared": ALL, "private": NONE, "draft": NONE}

    async def test_another_tenant(
        self, http: httpx.AsyncClient, matrix: Matrix, new_tenant: NewTenant
    ) -> None:
        stranger = await (await new_tenant()).agent(matrix.owner_agent)  # even the same agent_id
        assert await surfaces(http, bearer(stranger), matrix) == {
            "shared": NONE,
            "private": NONE,
            "draft": NONE,
        }

    async def test_a_superadmin_sees_published_shared_knowledge_and_oversees_the_rest(
        self, http: httpx.AsyncClient, matrix: Matrix, admin_key: str
    ) -> None:
        as_admin = bearer(admin_key, **{"X-Impersonate-Tenant": matrix.tenant.id})
        assert await surfaces(http, as_admin, matrix) == {"shared": ALL, "private": NONE, "draft": NONE}
        oversight = await http.get("/api/v1/knowledge", params={"all_subjects": "true"}, headers=as_admin)
        ids = {a["id"] for a in oversight.json()["data"]}
        assert ids == {matrix.shared, matrix.private, matrix.draft}

    async def test_a_superadmin_impersonating_another_tenant_sees_none_of_it(
        self, http: httpx.AsyncClient, matrix: Matrix, admin_key: str, new_tenant: NewTenant
    ) -> None:
        other = await new_tenant()
        as_other = bearer(admin_key, **{"X-Impersonate-Tenant": other.id})
        assert await surfaces(http, as_other, matrix) == {"shared": NONE, "private": NONE, "draft": NONE}
        oversight = await http.get("/api/v1/knowledge", params={"all_subjects": "true"}, headers=as_other)
        assert oversight.json()["meta"]["total_count"] == 0

    async def test_visibility_never_leaks_through_the_gate(
        self, http: httpx.AsyncClient, matrix: Matrix, new_tenant: NewTenant
    ) -> None:
        """Proposing another subject's private or draft text (or title) reveals nothing: it is created."""
        other = await matrix.tenant.agent("someone-else")
        for title, body in (("My rota notes", PRIVATE), ("Keeper rota v2 copy", DRAFT + " Copied.")):
            result = await propose(http, other, visibility="owner", title=title, body=body)
            assert result["created"] is True
            assert result["article"]["id"] not in (matrix.private, matrix.draft)
        stranger = await (await new_tenant()).agent()
        result = await propose(http, stranger, 201, title="Keeper rota", body=SHARED)
        assert result["verdict"] == "created"
        assert result["article"]["id"] != matrix.shared
        assert (await listed(http, stranger))["meta"]["total_count"] == 1


class TestNatsSurface:
    @pytest.mark.parametrize(
        "subject",
        [
            subjects.KNOWLEDGE_PROPOSE,
            subjects.KNOWLEDGE_GET,
            subjects.KNOWLEDGE_LIST,
            subjects.KNOWLEDGE_SEARCH,
            subjects.KNOWLEDGE_DELETE,
            subjects.KNOWLEDGE_VISIBLE_IDS,
            subjects.RECALL_CONTEXT,
            subjects.RECALL_REFERENCED,
            subjects.RECALL_METRICS,
        ],
    )
    async def test_missing_scope_is_refused(self, stack: CairnStack, subject: str) -> None:
        reply = await ask(stack, subject, b"{}", None)
        assert reply.error is not None
        assert (reply.error.code, reply.error.status) == ("invalid_scope", 401)

    async def test_visible_ids_answers_only_what_the_scope_may_read(
        self, stack: CairnStack, matrix: Matrix, new_tenant: NewTenant
    ) -> None:
        """What promotion's cross-link check asks: foreign, private, draft and fabricated ids never survive."""
        ids = [matrix.shared, matrix.private, matrix.draft, str(uuid.uuid4()), "not-an-id"]
        body = VisibleIdsRequest(ids=ids).model_dump_json().encode()

        def scope(tenant_id: str, subject_id: str) -> dict[str, str]:
            s = Scope(tenant_id=tenant_id, subject_id=subject_id, role=Role.agent, key_id="test")
            return signed(stack, s, subjects.KNOWLEDGE_VISIBLE_IDS, body)

        owner = await ask(stack, subjects.KNOWLEDGE_VISIBLE_IDS, body, scope(matrix.tenant.id, "keeper"))
        assert owner.data == {"ids": [matrix.shared, matrix.private, matrix.draft]}
        peer = await ask(stack, subjects.KNOWLEDGE_VISIBLE_IDS, body, scope(matrix.tenant.id, "peer"))
        assert peer.data == {"ids": [matrix.shared]}
        other = await new_tenant()
        stranger = await ask(stack, subjects.KNOWLEDGE_VISIBLE_IDS, body, scope(other.id, "keeper"))
        assert stranger.data == {"ids": []}

    async def test_all_subjects_means_nothing_without_a_superadmin_scope(
        self, stack: CairnStack, matrix: Matrix
    ) -> None:
        s = Scope(tenant_id=matrix.tenant.id, subject_id="peer", role=Role.agent, key_id="test")
        body = ListArticlesRequest(all_subjects=True).model_dump_json().encode()
        reply = await ask(
            stack, subjects.KNOWLEDGE_LIST, body, signed(stack, s, subjects.KNOWLEDGE_LIST, body)
        )
        assert [a["id"] for a in reply.data] == [matrix.shared]
        delete = ArticleIdRequest(id=matrix.shared).model_dump_json().encode()
        deleted = await ask(
            stack, subjects.KNOWLEDGE_DELETE, delete, signed(stack, s, subjects.KNOWLEDGE_DELETE, delete)
        )
        assert deleted.error is not None
        assert deleted.error.code == "not_found"
