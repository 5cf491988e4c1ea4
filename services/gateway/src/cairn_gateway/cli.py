"""`cairn-admin`: operator commands.

`bootstrap` talks to PostgreSQL directly (it makes the first superadmin key, so no key exists yet to call
the API with); every other command calls a running gateway with a superadmin key.
"""

import argparse
import asyncio
import json
import sys
from typing import Any

import httpx
from pydantic_settings import BaseSettings, SettingsConfigDict

from cairn_contracts.identity import Role, TenantCreate
from cairn_gateway.store import IdentityStore
from cairn_storage import create_engine, make_sessionmaker


class AdminSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CAIRN_", extra="ignore", env_file=".cairn/env")
    gateway_url: str = "http://127.0.0.1:58080"
    admin_key: str | None = None
    database_url: str | None = None


async def bootstrap(database_url: str, demo_tenant: str | None) -> dict[str, Any]:
    """Create a superadmin key and, optionally, a tenant with one agent key. Returns the secrets (shown once)."""
    engine = create_engine(database_url, pool_size=1)
    try:
        store = IdentityStore(make_sessionmaker(engine))
        admin = await store.create_key(None, Role.superadmin, None, "bootstrap superadmin")
        result: dict[str, Any] = {"admin_key": admin.key, "admin_key_id": admin.id}
        if demo_tenant:
            tenant = await store.create_tenant(TenantCreate(name=demo_tenant))
            agent = await store.create_key(tenant.id, Role.agent, "demo-agent", "demo agent key")
            result |= {"tenant_id": tenant.id, "api_key": agent.key, "api_key_id": agent.id}
        return result
    finally:
        await engine.dispose()


def _call(
    settings: AdminSettings,
    method: str,
    path: str,
    body: dict[str, Any] | None = None,
    tenant: str | None = None,
) -> int:
    if not settings.admin_key:
        print("set CAIRN_ADMIN_KEY (or run from the checkout where .cairn/env holds it)", file=sys.stderr)
        return 2
    headers = {"Authorization": f"Bearer {settings.admin_key}"}
    if tenant:
        headers["X-Impersonate-Tenant"] = tenant
    response = httpx.request(
        method, settings.gateway_url.rstrip("/") + path, json=body, headers=headers, timeout=10
    )
    print(json.dumps(response.json(), indent=2))
    return 0 if response.is_success else 1


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="cairn-admin", description="Cairn operator commands")
    sub = parser.add_subparsers(dest="command", required=True)
    boot = sub.add_parser(
        "bootstrap", help="create a superadmin key (and a demo tenant) directly in PostgreSQL"
    )
    boot.add_argument("--database-url")
    boot.add_argument("--demo-tenant", help="also create this tenant with one agent key")
    tenant = sub.add_parser("create-tenant", help="create a tenant")
    tenant.add_argument("name")
    patch = sub.add_parser("set-tenant-limits", help="set a tenant's quota, promotion budget or rate limit")
    patch.add_argument("tenant_id")
    patch.add_argument("--memory-quota", type=int)
    patch.add_argument("--promotion-budget-per-hour", type=int)
    patch.add_argument("--rate-limit-per-second", type=float)
    patch.add_argument("--rate-limit-burst", type=int)
    key = sub.add_parser("create-key", help="create an API key (its secret is printed once)")
    key.add_argument("--tenant-id")
    key.add_argument("--role", choices=[r.value for r in Role], default="agent")
    key.add_argument("--agent-id")
    key.add_argument("--name")
    keys = sub.add_parser("list-keys", help="list a tenant's keys (never their secrets)")
    keys.add_argument("tenant_id")
    revoke = sub.add_parser("revoke-key", help="revoke a key")
    revoke.add_argument("key_id")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    settings = AdminSettings()
    if args.command == "bootstrap":
        url = args.database_url or settings.database_url
        if not url:
            print("give --database-url or set CAIRN_DATABASE_URL", file=sys.stderr)
            return 2
        print(json.dumps(asyncio.run(bootstrap(url, args.demo_tenant))))
        return 0
    if args.command == "create-tenant":
        return _call(settings, "POST", "/api/v1/tenants", {"name": args.name})
    if args.command == "set-tenant-limits":
        fields = ("memory_quota", "promotion_budget_per_hour", "rate_limit_per_second", "rate_limit_burst")
        body = {f: getattr(args, f) for f in fields if getattr(args, f) is not None}
        return _call(settings, "PATCH", f"/api/v1/tenants/{args.tenant_id}", body)
    if args.command == "create-key":
        body = {"tenant_id": args.tenant_id, "role": args.role, "agent_id": args.agent_id, "name": args.name}
        return _call(settings, "POST", "/api/v1/keys", body)
    if args.command == "list-keys":
        return _call(settings, "GET", "/api/v1/keys", tenant=args.tenant_id)
    return _call(settings, "DELETE", f"/api/v1/keys/{args.key_id}")


if __name__ == "__main__":
    sys.exit(main())
