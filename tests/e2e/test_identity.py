"""Identity at the gateway: keys, subject derivation, impersonation, auth errors, projects."""

import asyncio
import time
import uuid

import httpx

from conftest import TenantHandle, bearer
from tests.e2e.test_spine import assert_envelope


async def whoami(http: httpx.AsyncClient, key: str, **headers: str) -> dict[str, object]:
    response = await http.get("/api/v1/whoami", headers=bearer(key, **headers))
    assert response.status_code == 200, response.text
    data: dict[str, object] = response.json()["data"]
    return data


class TestSubjectDerivation:
    async def test_keys_with_the_same_agent_id_share_one_subject(
        self, http: httpx.AsyncClient, tenant: TenantHandle
    ) -> None:
        first, second = await tenant.agent("planner"), await tenant.agent("planner")
        a, b = await whoami(http, first), await whoami(http, second)
        assert a["subject_id"] == b["subject_id"] == "planner"
        assert a["key_id"] != b["key_id"]
        assert a["tenant_id"] == b["tenant_id"] == tenant.id

    async def test_a_key_without_agent_id_is_its_own_subject(
        self, http: httpx.AsyncClient, tenant: TenantHandle
    ) -> None:
        key = await tenant.key("agent", None)
        me = await whoami(http, key)
        assert me["subject_id"] == me["key_id"]
        user = await whoami(http, await tenant.key("user", "ignored-for-users"))
        assert user["subject_id"] == user["key_id"]

    async def test_body_scope_fields_change_nothing(
        self, http: httpx.AsyncClient, tenant: TenantHandle, new_tenant: object
    ) -> None:
        key = await tenant.agent("a1")
        other = uuid.uuid4()
        response = await http.post(
            "/api/v1/memory",
            json={
                "text": "body scope must be ignored",
                "tenant_id": str(other),
                "subject_id": "someone-else",
                "scope": {"tenant_id": str(other)},
            },
            headers=bearer(key),
        )
        assert response.status_code == 201, response.text
        listed = await http.get(
            "/api/v1/memory", params={"tenant_id": str(other), "subject_id": "x"}, headers=bearer(key)
        )
        texts = [m["text"] for m in listed.json()["data"]]
        assert texts == ["body scope must be ignored"]
        other_agent = await tenant.agent("someone-else")
        assert (await http.get("/api/v1/memory", headers=bearer(other_agent))).json()["data"] == []


class TestAuthErrors:
    async def test_missing_and_malformed_authorization_are_401(self, http: httpx.AsyncClient) -> None:
        assert_envelope(await http.get("/api/v1/whoami"), 401, "unauthenticated")
        assert_envelope(
            await http.get("/api/v1/whoami", headers={"Authorization": "Basic abc"}), 401, "unauthenticated"
        )
        assert_envelope(
            await http.get("/api/v1/whoami", headers={"Authorization": "Bearer short"}),
            401,
            "unauthenticated",
        )

    async def test_unknown_and_revoked_keys_get_identical_401_bodies(
        self, http: httpx.AsyncClient, tenant: TenantHandle, admin_key: str
    ) -> None:
        key = await tenant.agent()
        me = await whoami(http, key)
        revoked = await http.delete(f"/api/v1/keys/{me['key_id']}", headers=bearer(admin_key))
        assert revoked.status_code == 200, revoked.text
        assert revoked.json()["data"]["revoked_at"]
        unknown = await http.get("/api/v1/whoami", headers=bearer("cairn_" + "x" * 43))
        # Revocation is seen within the key cache TTL (1 s in tests) on every replica.
        for _ in range(30):
            after = await http.get("/api/v1/whoami", headers=bearer(key))
            if after.status_code == 401:
                break
            await asyncio.sleep(0.2)
        assert_envelope(after, 401, "unauthenticated")
        assert after.json() == unknown.json()

    async def test_wrong_role_is_403(self, http: httpx.AsyncClient, tenant: TenantHandle) -> None:
        agent = await tenant.agent()
        assert_envelope(
            await http.post("/api/v1/tenants", json={"name": "nope"}, headers=bearer(agent)), 403, "forbidden"
        )
        assert_envelope(
            await http.post("/api/v1/keys", json={"role": "agent"}, headers=bearer(agent)), 403, "forbidden"
        )

    async def test_keys_are_shown_once_and_never_listed(
        self, http: httpx.AsyncClient, tenant: TenantHandle
    ) -> None:
        user = await tenant.key("user")
        created = await http.post(
            "/api/v1/keys",
            json={"role": "agent", "agent_id": "child", "tenant_id": str(uuid.uuid4())},
            headers=bearer(user),
        )
        assert created.status_code == 201, created.text
        secret = created.json()["data"]["key"]
        assert secret.startswith("cairn_")
        assert created.json()["data"]["tenant_id"] == tenant.id  # a body tenant_id is ignored
        listed = await http.get("/api/v1/keys", headers=bearer(user))
        assert listed.status_code == 200
        assert secret not in listed.text
        assert all("key" not in k for k in listed.json()["data"])
        # a user key may only mint agent keys
        assert_envelope(
            await http.post("/api/v1/keys", json={"role": "user"}, headers=bearer(user)), 403, "forbidden"
        )


class TestImpersonation:
    async def test_superadmin_needs_impersonation_on_oversight_paths(
        self, http: httpx.AsyncClient, admin_key: str, tenant: TenantHandle
    ) -> None:
        assert_envelope(
            await http.get("/api/v1/memory", params={"all_subjects": "true"}, headers=bearer(admin_key)),
            422,
            "impersonation_tenant_required",
        )
        assert_envelope(
            await http.delete(f"/api/v1/memory/{uuid.uuid4()}", headers=bearer(admin_key)),
            422,
            "impersonation_tenant_required",
        )
        ok = await http.get(
            "/api/v1/memory",
            params={"all_subjects": "true"},
            headers=bearer(admin_key, **{"X-Impersonate-Tenant": tenant.id}),
        )
        assert ok.status_code == 200, ok.text

    async def test_impersonation_header_is_ignored_for_other_roles(
        self, http: httpx.AsyncClient, tenant: TenantHandle, new_tenant: object
    ) -> None:
        key = await tenant.agent()
        me = await whoami(http, key, **{"X-Impersonate-Tenant": str(uuid.uuid4())})
        assert me["tenant_id"] == tenant.id
        assert me["impersonating"] is False


class TestRateLimit:
    async def test_burst_over_the_limit_is_429_with_retry_after_shared_by_two_gateways(
        self, http: httpx.AsyncClient, tenant: TenantHandle, admin_key: str, stack: object
    ) -> None:
        from cairn_devstack import free_port
        from cairn_devstack.cairn import CairnStack

        assert isinstance(stack, CairnStack)
        patch = await http.patch(
            f"/api/v1/tenants/{tenant.id}",
            json={"rate_limit_per_second": 0.5, "rate_limit_burst": 6},
            headers=bearer(admin_key),
        )
        assert patch.status_code == 200, patch.text
        key = await tenant.agent()
        port = free_port()
        await stack.start_gateway("gateway-2", port)
        try:
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as second:
                codes = []
                began = time.monotonic()
                for i in range(10):
                    client = http if i % 2 == 0 else second
                    r = await client.post(
                        "/api/v1/projects", json={"name": f"p{i}", "slug": f"p{i}"}, headers=bearer(key)
                    )
                    codes.append(r.status_code)
                    if r.status_code == 429:
                        limited = r
            # The burst of 6, plus what the bucket refilled (0.5/s) while a loaded machine sent the ten.
            refilled = int((time.monotonic() - began) * 0.5)
            assert 6 <= codes.count(201) <= 6 + refilled, (codes, refilled)
            assert codes.count(201) + codes.count(429) == 10, codes
            assert codes.count(429) >= 1, codes
            assert_envelope(limited, 429, "rate_limited")
            assert int(limited.headers["Retry-After"]) >= 1
        finally:
            await stack.supervisor.stop("gateway-2")


class TestProjects:
    async def _project(self, http: httpx.AsyncClient, key: str, **body: str) -> dict[str, str]:
        response = await http.post("/api/v1/projects", json=body, headers=bearer(key))
        assert response.status_code == 201, response.text
        data: dict[str, str] = response.json()["data"]
        return data

    async def test_resolve_by_every_form_and_precedence(
        self, http: httpx.AsyncClient, tenant: TenantHandle
    ) -> None:
        key = await tenant.agent()
        cairn = await self._project(
            http, key, name="Cairn", slug="cairn", repo_url="https://github.com/acme/cairn"
        )
        other = await self._project(
            http, key, name="Other", slug="other", repo_url="git@github.com:acme/other.git"
        )

        async def resolve(**params: str) -> httpx.Response:
            return await http.get("/api/v1/projects/resolve", params=params, headers=bearer(key))

        for form in (
            "git@github.com:acme/cairn.git",
            "https://github.com/acme/cairn",
            "acme/cairn",
            "https://github.com/Acme/Cairn.git",
        ):
            response = await resolve(repo_url=form)
            assert response.status_code == 200, (form, response.text)
            assert response.json()["data"]["id"] == cairn["id"]
        assert (await resolve(slug="other")).json()["data"]["id"] == other["id"]
        assert (await resolve(name="cairn")).json()["data"]["id"] == cairn["id"]
        # slug beats repo_url beats name
        assert (await resolve(slug="other", repo_url="acme/cairn", name="Cairn")).json()["data"][
            "id"
        ] == other["id"]
        assert (await resolve(repo_url="acme/other", name="Cairn")).json()["data"]["id"] == other["id"]

    async def test_resolution_codes(
        self, http: httpx.AsyncClient, tenant: TenantHandle, new_tenant: object
    ) -> None:
        key = await tenant.agent()
        await self._project(http, key, name="Twin", slug="twin-a", repo_url="acme/twin")
        await self._project(http, key, name="Twin", slug="twin-b", repo_url="https://gitlab.com/acme/twin")

        async def resolve(**params: str) -> httpx.Response:
            return await http.get("/api/v1/projects/resolve", params=params, headers=bearer(key))

        assert_envelope(await resolve(), 422, "no_identifier")
        assert_envelope(await resolve(slug="  "), 422, "no_identifier")
        assert_envelope(await resolve(slug="missing"), 404, "not_found")
        assert_envelope(await resolve(name="Twin"), 409, "ambiguous_resolution")
        assert_envelope(await resolve(repo_url="acme/twin"), 409, "ambiguous_resolution")
        assert (await resolve(slug="twin-b")).status_code == 200

    async def test_projects_are_tenant_scoped(
        self, http: httpx.AsyncClient, tenant: TenantHandle, new_tenant: object
    ) -> None:
        from collections.abc import Awaitable, Callable

        assert callable(new_tenant)
        make: Callable[[], Awaitable[TenantHandle]] = new_tenant
        other = await make()
        mine = await tenant.agent()
        theirs = await other.agent()
        await self._project(http, mine, name="Secret", slug="secret", repo_url="acme/secret")
        response = await http.get(
            "/api/v1/projects/resolve", params={"slug": "secret"}, headers=bearer(theirs)
        )
        assert_envelope(response, 404, "not_found")
        assert (await http.get("/api/v1/projects", headers=bearer(theirs))).json()["data"] == []

    async def test_duplicate_slug_is_409(self, http: httpx.AsyncClient, tenant: TenantHandle) -> None:
        key = await tenant.agent()
        await self._project(http, key, name="A", slug="dup")
        response = await http.post("/api/v1/projects", json={"name": "B", "slug": "dup"}, headers=bearer(key))
        assert_envelope(response, 409, "already_exists")
