"""Tenants, keys, whoami and projects."""

from typing import Annotated

from fastapi import APIRouter, Header, Query, Request, status

from cairn_contracts import identity as contract
from cairn_contracts.envelope import DataEnvelope
from cairn_contracts.errors import BadRequest, Forbidden, ImpersonationRequired, NoIdentifier, NotFound
from cairn_contracts.identity import Role
from cairn_gateway.deps import (
    KeyDep,
    ScopeDep,
    StateDep,
    SuperadminDep,
    WriteKeyDep,
    WriteScopeDep,
    audit_impersonation,
    impersonated_tenant,
)
from cairn_scope import derive_subject

router = APIRouter(prefix="/api/v1")

KEY_ADMIN_ROLES = (Role.user, Role.orchestrator)


@router.get("/whoami", tags=["identity"])
async def whoami(
    key: KeyDep, x_impersonate_tenant: Annotated[str | None, Header()] = None
) -> DataEnvelope[contract.WhoAmI]:
    """The scope the server derives from the caller's key: what every memory call is confined to."""
    tenant = impersonated_tenant(key, x_impersonate_tenant)
    return DataEnvelope(
        data=contract.WhoAmI(
            tenant_id=tenant or key.tenant_id,
            subject_id=derive_subject(key),
            role=key.role,
            agent_id=key.agent_id,
            key_id=key.key_id,
            impersonating=tenant is not None,
        )
    )


@router.post("/tenants", status_code=status.HTTP_201_CREATED, tags=["admin"])
async def create_tenant(
    body: contract.TenantCreate, state: StateDep, _: SuperadminDep, __: WriteKeyDep
) -> DataEnvelope[contract.Tenant]:
    return DataEnvelope(data=await state.store.create_tenant(body))


@router.patch("/tenants/{tenant_id}", tags=["admin"])
async def patch_tenant(
    tenant_id: str, body: contract.TenantPatch, state: StateDep, _: SuperadminDep, __: WriteKeyDep
) -> DataEnvelope[contract.Tenant]:
    return DataEnvelope(data=await state.store.patch_tenant(tenant_id, body))


@router.put("/tenants/{tenant_id}/providers", tags=["admin"])
async def put_tenant_providers(
    tenant_id: str, body: contract.TenantProvidersUpdate, state: StateDep, _: SuperadminDep, __: WriteKeyDep
) -> DataEnvelope[contract.TenantProvidersOut]:
    """Set a tenant's own embedding / compiler endpoint and key (bring your own key; stored encrypted)."""
    if not await state.store.tenant_exists(tenant_id):
        raise NotFound("no such tenant")
    return DataEnvelope(data=await state.store.save_providers(tenant_id, body))


@router.get("/tenants/{tenant_id}/providers", tags=["admin"])
async def get_tenant_providers(
    tenant_id: str, state: StateDep, _: SuperadminDep
) -> DataEnvelope[contract.TenantProvidersOut]:
    """A tenant's provider settings; keys are never shown, only whether one is set."""
    if not await state.store.tenant_exists(tenant_id):
        raise NotFound("no such tenant")
    return DataEnvelope(data=await state.store.providers(tenant_id))


@router.post("/keys", status_code=status.HTTP_201_CREATED, tags=["admin"])
async def create_key(
    body: contract.KeyCreate, state: StateDep, key: WriteKeyDep
) -> DataEnvelope[contract.CreatedKey]:
    """Superadmin creates any key; a tenant user/orchestrator key creates agent keys in its own tenant."""
    if key.role is Role.superadmin:
        if body.role is Role.superadmin:
            tenant_id = None
        elif not body.tenant_id:
            raise BadRequest("tenant_id is required")
        elif not await state.store.tenant_exists(body.tenant_id):
            raise NotFound("no such tenant")
        else:
            tenant_id = body.tenant_id
    elif key.role in KEY_ADMIN_ROLES and body.role is Role.agent:
        tenant_id = key.tenant_id  # a body tenant_id is ignored: keys stay in the caller's tenant
    else:
        raise Forbidden()
    created = await state.store.create_key(
        str(tenant_id) if tenant_id else None, body.role, body.agent_id, body.name, actor=key
    )
    return DataEnvelope(data=created)


def _key_admin_tenant(key: KeyDep, impersonate: str | None) -> str:
    if key.role is Role.superadmin:
        tenant = impersonated_tenant(key, impersonate)
        if tenant is None:
            raise ImpersonationRequired()
        return tenant
    if key.role not in KEY_ADMIN_ROLES or not key.tenant_id:
        raise Forbidden()
    return key.tenant_id


@router.get("/keys", tags=["admin"])
async def list_keys(
    state: StateDep,
    key: KeyDep,
    request: Request,
    x_impersonate_tenant: Annotated[str | None, Header()] = None,
) -> DataEnvelope[list[contract.ApiKeyInfo]]:
    """The tenant's keys, never their secrets (user/orchestrator, or superadmin impersonating)."""
    tenant = _key_admin_tenant(key, x_impersonate_tenant)
    if key.role is Role.superadmin:
        await audit_impersonation(state, key, tenant, request)
    return DataEnvelope(data=await state.store.list_keys(tenant))


@router.delete("/keys/{key_id}", tags=["admin"])
async def revoke_key(key_id: str, state: StateDep, key: WriteKeyDep) -> DataEnvelope[contract.ApiKeyInfo]:
    """Revoke a key: superadmin any; user/orchestrator in their tenant; any key may revoke itself."""
    if key.role is Role.superadmin:
        confine = None
    elif key.role in KEY_ADMIN_ROLES or key_id == key.key_id:
        confine = key.tenant_id
    else:
        raise NotFound("no such key")
    revoked = await state.store.revoke_key(key_id, confine, actor=key)
    state.auth.cache.forget_key(revoked.id)
    return DataEnvelope(data=revoked)


@router.post("/projects", status_code=status.HTTP_201_CREATED, tags=["projects"])
async def create_project(
    body: contract.ProjectCreate, state: StateDep, scope: WriteScopeDep
) -> DataEnvelope[contract.Project]:
    return DataEnvelope(
        data=await state.store.create_project(scope.tenant_id, body, state.settings.max_projects_per_tenant)
    )


@router.get("/projects", tags=["projects"])
async def list_projects(state: StateDep, scope: ScopeDep) -> DataEnvelope[list[contract.Project]]:
    return DataEnvelope(data=await state.store.list_projects(scope.tenant_id))


@router.get("/projects/resolve", tags=["projects"])
async def resolve_project(
    state: StateDep,
    scope: ScopeDep,
    slug: Annotated[str | None, Query(max_length=200)] = None,
    repo_url: Annotated[str | None, Query(max_length=500)] = None,
    name: Annotated[str | None, Query(max_length=200)] = None,
) -> DataEnvelope[contract.Project]:
    """Map slug > repo_url > name to a project of the caller's tenant."""
    given = {k: v for k, v in {"slug": slug, "repo_url": repo_url, "name": name}.items() if v and v.strip()}
    if not given:
        raise NoIdentifier()
    return DataEnvelope(
        data=await state.store.resolve_project(
            scope.tenant_id, slug=given.get("slug"), repo_url=given.get("repo_url"), name=given.get("name")
        )
    )
