"""Helpers shared by the chaos tests."""

import uuid

import httpx
import nats
from nats.aio.client import Client as NATS

from cairn_devstack.bus_secrets import OPERATOR
from cairn_devstack.cairn import CairnStack
from conftest import bearer


async def operator_nats(stack: CairnStack) -> NATS:
    """The dev-only debug NATS user with every permission (services' own users are allow-listed)."""
    return await nats.connect(stack.nats_url, user=OPERATOR, password=stack.secrets.nats_passwords[OPERATOR])


async def new_agent(http: httpx.AsyncClient, admin_key: str) -> tuple[str, str]:
    """A fresh tenant and an agent key in it: (tenant_id, key)."""
    r = await http.post(
        "/api/v1/tenants", json={"name": f"c-{uuid.uuid4().hex[:12]}"}, headers=bearer(admin_key)
    )
    assert r.status_code == 201, r.text
    tenant_id = r.json()["data"]["id"]
    r = await http.post(
        "/api/v1/keys",
        json={"tenant_id": tenant_id, "role": "agent", "agent_id": f"agent-{uuid.uuid4().hex[:8]}"},
        headers=bearer(admin_key),
    )
    assert r.status_code == 201, r.text
    return tenant_id, str(r.json()["data"]["key"])
