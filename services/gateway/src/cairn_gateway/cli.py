"""Bootstrap: the first superadmin key, written straight into PostgreSQL (no key exists yet to call the API
with). The operator commands are `cairn admin ...` (package `cairn-cli`; `cairn-admin` is its alias)."""

from typing import Any

from cairn_contracts.identity import Role, TenantCreate
from cairn_gateway.store import IdentityStore
from cairn_storage import create_engine, make_sessionmaker


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


def main(argv: list[str] | None = None) -> int:
    """`python -m cairn_gateway.cli bootstrap --database-url ... [--demo-tenant demo]` (used by `up`)."""
    import argparse
    import asyncio
    import json

    parser = argparse.ArgumentParser(prog="cairn_gateway.cli", description="Create the first superadmin key")
    sub = parser.add_subparsers(dest="command", required=True)
    boot = sub.add_parser("bootstrap", help="create a superadmin key (and a demo tenant) in PostgreSQL")
    boot.add_argument("--database-url", required=True)
    boot.add_argument("--demo-tenant", help="also create this tenant with one agent key")
    args = parser.parse_args(argv)
    print(json.dumps(asyncio.run(bootstrap(args.database_url, args.demo_tenant))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
