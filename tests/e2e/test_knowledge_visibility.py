"""The visibility matrix: tenant-published / owner / draft articles x the same subject (through a second,
rotated key) / another subject / another tenant / a superadmin, through GET, list, search and merged recall.
Anything a caller may not see is 404 or absent: never 403, never an existence leak."""

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import httpx
import pytest

from conftest import TenantHandle, bearer
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
