"""FastAPI dependencies: the only place a key becomes a Scope."""

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Header, Request
from opentelemetry import trace

from cairn_contracts.errors import Forbidden, ImpersonationRequired
from cairn_contracts.identity import Role
from cairn_gateway.auth import Authenticator
from cairn_gateway.ratelimit import RateLimiter
from cairn_gateway.settings import GatewaySettings
from cairn_gateway.store import IdentityStore, parse_uuid
from cairn_observability.logs import bind_tenant
from cairn_observability.tracing import set_scope_attributes
from cairn_scope import KeyIdentity, Scope, derive_scope
from cairn_servicekit import ServiceClient
from cairn_servicekit.health import HealthCheck
from cairn_servicekit.payload_codec import AesGcmCodec


@dataclass
class GatewayState:
    settings: GatewaySettings
    store: IdentityStore
    auth: Authenticator
    limiter: RateLimiter
    services: ServiceClient
    readiness_checks: list[HealthCheck]
    codec: AesGcmCodec | None = None  # Temporal payload keys, for the codec endpoint


def gateway_state(request: Request) -> GatewayState:
    state: GatewayState = request.app.state.gateway
    return state


async def get_state(request: Request) -> GatewayState:  # async: FastAPI runs a sync one in a thread
    return gateway_state(request)


StateDep = Annotated[GatewayState, Depends(get_state)]
# Header parameters, declared where they are read (one dependency per request instead of a chain of
# them: FastAPI's per-dependency cost was a fifth of the gateway's CPU on the write path).
Authorization = Annotated[str | None, Header(include_in_schema=False)]
ImpersonateTenant = Annotated[str | None, Header(description="superadmin only: the tenant to act in")]


async def require_key(request: Request, authorization: Authorization = None) -> KeyIdentity:
    return await gateway_state(request).auth.authenticate(authorization)


KeyDep = Annotated[KeyIdentity, Depends(require_key)]


def impersonated_tenant(key: KeyIdentity, header: str | None) -> str | None:
    """The header counts only for superadmin keys; a malformed tenant id counts as missing."""
    if key.role is not Role.superadmin or not header:
        return None
    parsed = parse_uuid(header.strip())
    return str(parsed) if parsed else None


async def audit_impersonation(state: "GatewayState", key: KeyIdentity, tenant: str, request: Request) -> None:
    """Every superadmin request that acts in a tenant leaves an audit event (before it runs)."""
    await state.store.record_impersonation(key, tenant, request.method, request.url.path)


async def scope_of(request: Request, authorization: str | None, x_impersonate_tenant: str | None) -> Scope:
    """The caller's key, authenticated, as the scope it acts in."""
    state = gateway_state(request)
    key = await state.auth.authenticate(authorization)
    tenant = impersonated_tenant(key, x_impersonate_tenant)
    if key.role is Role.superadmin and x_impersonate_tenant and tenant is None:
        raise ImpersonationRequired("X-Impersonate-Tenant is not a tenant id")
    scope = derive_scope(key, tenant)
    set_scope_attributes(trace.get_current_span(), scope.tenant_id, scope.subject_id)
    bind_tenant(scope.tenant_id)
    if tenant is not None:
        await audit_impersonation(state, key, tenant, request)
    return scope


async def require_scope(
    request: Request, authorization: Authorization = None, x_impersonate_tenant: ImpersonateTenant = None
) -> Scope:
    return await scope_of(request, authorization, x_impersonate_tenant)


ScopeDep = Annotated[Scope, Depends(require_scope)]


async def rate_limited_scope(
    request: Request, authorization: Authorization = None, x_impersonate_tenant: ImpersonateTenant = None
) -> Scope:
    """The write paths: the caller's scope, after taking a token from its key's bucket."""
    scope = await scope_of(request, authorization, x_impersonate_tenant)
    await gateway_state(request).limiter.take(scope.key_id, scope.tenant_id)
    return scope


WriteScopeDep = Annotated[Scope, Depends(rate_limited_scope)]


async def read_limited_scope(
    request: Request, authorization: Authorization = None, x_impersonate_tenant: ImpersonateTenant = None
) -> Scope:
    """Recall and search: the caller's scope, after a token from its key's read bucket."""
    scope = await scope_of(request, authorization, x_impersonate_tenant)
    await gateway_state(request).limiter.take(scope.key_id, scope.tenant_id, "read")
    return scope


ReadScopeDep = Annotated[Scope, Depends(read_limited_scope)]


async def require_superadmin(key: KeyDep) -> KeyIdentity:
    if key.role is not Role.superadmin:
        raise Forbidden()
    return key


SuperadminDep = Annotated[KeyIdentity, Depends(require_superadmin)]


async def rate_limited_key(state: StateDep, key: KeyDep) -> KeyIdentity:
    """Admin write paths (no memory scope needed): rate-limit by key."""
    await state.limiter.take(key.key_id, key.tenant_id)
    return key


WriteKeyDep = Annotated[KeyIdentity, Depends(rate_limited_key)]
