"""The MCP server over stdio (`cairn-mcp`) and Streamable HTTP (`/mcp` on the gateway), driven by the
`mcp` SDK's own client against the real stack."""

import json
import os
import re
import shutil
import sys
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from cairn_devstack.cairn import CairnStack
from cairn_mcp import TOOL_NAMES
from conftest import TenantHandle, bearer

NewTenant = Callable[[], Awaitable[TenantHandle]]

EXPECTED_TOOLS = {
    "memory_remember",
    "memory_recall",
    "memory_list",
    "memory_forget",
    "memory_promote",
    "memory_graduate",
    "recall_context",
    "recall_referenced",
    "resolve_project",
    "knowledge_search",
    "knowledge_propose",
}
# No property may name the isolation boundary. (`re_scope` of memory_graduate is the reference's project ->
# global widening of an article, not a scope parameter.)
FORBIDDEN = re.compile(r"(^|_)(tenant|subject|scope|owner)(_|$)|^(x_)?impersonat")
ALLOWED = {"re_scope"}

Connect = Callable[[str], Any]


@asynccontextmanager
async def over_stdio(stack: CairnStack, key: str) -> AsyncIterator[Client]:
    command = shutil.which("cairn-mcp", path=os.path.dirname(sys.executable)) or "cairn-mcp"
    params = StdioServerParameters(
        command=command,
        # Merged over the SDK's safe default environment (PATH, HOME, ...).
        env={"CAIRN_GATEWAY_URL": stack.gateway_url, "CAIRN_API_KEY": key},
    )
    async with Client(params) as client:
        yield client


@asynccontextmanager
async def over_http(stack: CairnStack, key: str) -> AsyncIterator[Client]:
    from mcp.client.streamable_http import streamable_http_client

    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=30) as http,
        Client(streamable_http_client(f"{stack.gateway_url}/mcp", http_client=http)) as client,
    ):
        yield client


TRANSPORTS = {"stdio": over_stdio, "http": over_http}


@pytest.fixture(params=sorted(TRANSPORTS))
def connect(request: pytest.FixtureRequest, stack: CairnStack) -> Callable[[str], Any]:
    opener = TRANSPORTS[request.param]
    return lambda key: opener(stack, key)


def result_json(result: Any) -> dict[str, Any]:
    """The tool's answer: its text content is JSON, the same value as its structured content."""
    text = "".join(getattr(block, "text", "") for block in result.content)
    value: dict[str, Any] = json.loads(text)
    assert result.structured_content == value
    return value


async def call(client: Client, name: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(name, arguments)
    assert not result.is_error, result.content
    return result_json(result)


async def call_error(client: Client, name: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(name, arguments)
    assert result.is_error, result.content
    return result_json(result)["error"]


def _properties(schema: Any) -> set[str]:
    """Every property name anywhere in a JSON schema (nested objects and $defs included)."""
    found: set[str] = set()
    if isinstance(schema, dict):
        for name, sub in (schema.get("properties") or {}).items():
            found.add(name)
            found |= _properties(sub)
        for key, value in schema.items():
            if key != "properties":
                found |= _properties(value)
    elif isinstance(schema, list):
        for item in schema:
            found |= _properties(item)
    return found


class TestToolList:
    async def test_exactly_the_tools_and_no_scope_parameter(
        self, connect: Connect, tenant: TenantHandle
    ) -> None:
        async with connect(await tenant.agent()) as client:
            tools = (await client.list_tools()).tools
        assert {t.name for t in tools} == EXPECTED_TOOLS == set(TOOL_NAMES)
        assert len(tools) == len(EXPECTED_TOOLS)
        for tool in tools:
            assert tool.description, tool.name
            assert len(tool.description) > 40, tool.name
            names = _properties(tool.input_schema)
            assert not [n for n in names - ALLOWED if FORBIDDEN.search(n.lower())], (tool.name, names)


class TestRoundTrip:
    async def test_remember_recall_forget(self, connect: Connect, tenant: TenantHandle) -> None:
        async with connect(await tenant.agent()) as client:
            memory = await call(
                client, "memory_remember", text="The user prefers tabs over spaces", tags=["pref"]
            )
            assert memory["source"] == "explicit"
            recalled = await call(client, "memory_recall", query="tabs or spaces?")
            assert memory["id"] in [hit["memory"]["id"] for hit in recalled["data"]]
            listed = await call(client, "memory_list")
            assert [m["id"] for m in listed["data"]] == [memory["id"]]
            gone = await call(client, "memory_forget", memory_id=memory["id"])
            assert gone["id"] == memory["id"]
            assert (await call(client, "memory_list"))["data"] == []
            error = await call_error(client, "memory_forget", memory_id=memory["id"])
            assert error["code"] == "not_found"

    async def test_promote_and_resolve_project(
        self, connect: Connect, tenant: TenantHandle, http: httpx.AsyncClient
    ) -> None:
        key = await tenant.agent()
        slug = f"p-{uuid.uuid4().hex[:8]}"
        made = await http.post(
            "/api/v1/projects",
            json={"name": "Cairn", "slug": slug, "repo_url": f"https://github.com/acme/{slug}"},
            headers=bearer(key),
        )
        assert made.status_code == 201, made.text
        async with connect(key) as client:
            project = await call(client, "resolve_project", repo_url=f"git@github.com:acme/{slug}.git")
            assert project["id"] == made.json()["data"]["id"]
            error = await call_error(client, "resolve_project")
            assert error["code"] == "no_identifier"
            accepted = await call(client, "memory_promote", session_id=f"s-{uuid.uuid4().hex[:6]}")
            assert accepted["status"] == "noop"


class TestIsolation:
    async def test_agent_a_never_sees_agent_b_or_another_tenant(
        self, connect: Connect, tenant: TenantHandle, new_tenant: NewTenant
    ) -> None:
        other = await new_tenant()
        key_a, key_b, key_c = await tenant.agent(), await tenant.agent(), await other.agent()
        async with connect(key_b) as client:
            b_memory = await call(
                client, "memory_remember", text="Agent B's secret plan is the zebra protocol"
            )
        async with connect(key_c) as client:
            c_memory = await call(client, "memory_remember", text="Tenant C's zebra protocol is different")
        async with connect(key_a) as client:
            assert (await call(client, "memory_list"))["data"] == []
            recalled = await call(client, "memory_recall", query="zebra protocol")
            assert recalled["data"] == []
            for foreign in (b_memory["id"], c_memory["id"]):
                assert (await call_error(client, "memory_forget", memory_id=foreign))["code"] == "not_found"
        async with connect(key_b) as client:  # B's memory is untouched
            assert [m["id"] for m in (await call(client, "memory_list"))["data"]] == [b_memory["id"]]


class TestErrors:
    async def test_over_quota_remember_is_a_tool_error_naming_quota_exceeded(
        self, connect: Connect, tenant: TenantHandle, http: httpx.AsyncClient, admin_key: str
    ) -> None:
        patched = await http.patch(
            f"/api/v1/tenants/{tenant.id}", json={"memory_quota": 1}, headers=bearer(admin_key)
        )
        assert patched.status_code == 200, patched.text
        async with connect(await tenant.agent()) as client:
            await call(client, "memory_remember", text="the only memory that fits")
            error = await call_error(client, "memory_remember", text="one too many")
        assert error["code"] == "quota_exceeded"
        assert error["status"] == 422

    async def test_validation_errors_carry_their_code(self, connect: Connect, tenant: TenantHandle) -> None:
        async with connect(await tenant.agent()) as client:
            error = await call_error(client, "memory_recall", query="x" * 501)
        assert error["code"] == "query_too_long"


class TestHttpAuth:
    async def test_no_key_or_a_bad_key_is_refused_with_401(self, stack: CairnStack) -> None:
        initialize = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        }
        headers = {"Accept": "application/json, text/event-stream"}
        async with httpx.AsyncClient(base_url=stack.gateway_url) as http:
            for auth in (
                {},
                {"Authorization": "Bearer cairn_not-a-real-key"},
                {"Authorization": "Basic abc"},
            ):
                response = await http.post("/mcp", json=initialize, headers={**headers, **auth})
                assert response.status_code == 401, response.text
                assert response.json()["error"]["code"] == "unauthenticated"
                assert response.headers["www-authenticate"] == "Bearer"

    async def test_the_mcp_client_without_a_key_cannot_connect(self, stack: CairnStack) -> None:
        with pytest.raises(Exception):  # noqa: B017, PT011 - the SDK surfaces the 401 as its own error
            async with Client(f"{stack.gateway_url}/mcp") as client:
                await client.list_tools()
