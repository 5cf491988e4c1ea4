"""Regression tests for what schemathesis found: strings PostgreSQL cannot store (NUL, lone surrogates) in
any location, unbounded offsets, oversized and over-nested bodies, and an OpenAPI document that did not
declare the error envelope. Each class is refused at the edge with a stable code and writes nothing."""

import asyncio
import json
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from cairn_contracts import limits
from cairn_contracts.text import find_unstorable, unstorable_reason
from cairn_devstack.cairn import CairnStack
from conftest import TenantHandle, bearer
from tests.e2e.test_spine import assert_envelope

BAD_STRINGS = ["nul\u0000byte", "lone \ud800 surrogate", "\udfff"]


def raw_json(value: Any) -> bytes:
    # json.dumps escapes a lone surrogate as \udXXX, exactly what a hostile client sends.
    return json.dumps(value).encode()


async def post_raw(http: httpx.AsyncClient, path: str, key: str, value: Any) -> httpx.Response:
    return await http.post(
        path, content=raw_json(value), headers={**bearer(key), "Content-Type": "application/json"}
    )


async def total_memories(http: httpx.AsyncClient, key: str) -> int:
    response = await http.get("/api/v1/memory", headers=bearer(key))
    assert response.status_code == 200, response.text
    return int(response.json()["meta"]["total_count"])


class TestUnstorableText:
    def test_the_one_definition(self) -> None:
        assert unstorable_reason("ok é 😀") is None
        for bad in BAD_STRINGS:
            assert unstorable_reason(bad) is not None
        assert find_unstorable({"a": [1, {"b\u0000": 2}]}) == (
            "body.a.1.<key>",
            "must not contain NUL characters",
        )
        assert find_unstorable({"a": [1, {"b": "x\ud800"}]})[0] == "body.a.1.b"  # type: ignore[index]
        assert find_unstorable({"a": ["fine"], "b": None}) is None

    @pytest.mark.parametrize("bad", BAD_STRINGS)
    async def test_every_body_field_and_key(
        self, http: httpx.AsyncClient, tenant: TenantHandle, bad: str
    ) -> None:
        key = await tenant.agent()
        bodies = [
            ("/api/v1/memory", {"text": bad}),
            ("/api/v1/memory", {"text": "fine", "tags": [bad]}),
            ("/api/v1/memory", {"text": "fine", "metadata": {bad: 1}}),  # a JSON key
            ("/api/v1/memory", {"text": "fine", "metadata": {"deep": [{"x": bad}]}}),
            ("/api/v1/memory", {"text": "fine", bad: "an unknown field is checked too"}),
            ("/api/v1/memory", {"tier": "session", "session_id": "s", "role": "user", "content": bad}),
            ("/api/v1/memory", {"tier": "session", "session_id": bad, "role": "user", "content": "c"}),
            ("/api/v1/memory/recall", {"query": bad}),
            ("/api/v1/recall", {"query": "q", "session_id": bad}),
            ("/api/v1/projects", {"name": bad, "slug": "p"}),
            ("/api/v1/knowledge", {"title": "t", "body": bad}),
        ]
        for path, body in bodies:
            response = await post_raw(http, path, key, body)
            assert_envelope(response, 422, "validation_error")
        assert await total_memories(http, key) == 0

    async def test_admin_bodies(self, http: httpx.AsyncClient, admin_key: str) -> None:
        for body in ({"name": "t\u0000"}, {"name": "t", "x": {"\ud800": 1}}):
            assert_envelope(await post_raw(http, "/api/v1/tenants", admin_key, body), 422, "validation_error")

    async def test_query_and_path_parameters(self, http: httpx.AsyncClient, tenant: TenantHandle) -> None:
        key = await tenant.agent()
        for url in (
            "/api/v1/memory?tag=a%00b",
            "/api/v1/memory?a%00=1",
            "/api/v1/knowledge?category=%00",
            "/api/v1/projects/resolve?slug=x%00",
            "/api/v1/memory/abc%00def",
            "/api/v1/sessions/s%00/history",
            "/api/v1/knowledge/%00",
        ):
            response = await http.get(url, headers=bearer(key))
            assert_envelope(response, 422, "validation_error")
        response = await http.delete("/api/v1/memory/x%00", headers=bearer(key))
        assert_envelope(response, 422, "validation_error")

    async def test_a_nul_in_a_header_never_reaches_the_app(
        self, stack: CairnStack, tenant: TenantHandle
    ) -> None:
        """The HTTP server refuses it before any route runs (400, plain text: it is not an HTTP request)."""
        key = await tenant.agent()
        url = urlsplit(stack.gateway_url)
        reader, writer = await asyncio.open_connection(url.hostname, url.port)
        writer.write(
            f"POST /api/v1/memory HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\n"
            "Idempotency-Key: a\x00b\r\nContent-Type: application/json\r\nContent-Length: 15\r\n"
            'Connection: close\r\n\r\n{"text": "hi"} '.encode()
        )
        await writer.drain()
        status_line = await reader.readline()
        writer.close()
        assert status_line.split()[1] == b"400", status_line
        async with httpx.AsyncClient(base_url=stack.gateway_url) as http:
            assert await total_memories(http, key) == 0

    async def test_non_ascii_header_is_a_clean_422(self, http: httpx.AsyncClient, admin_key: str) -> None:
        response = await http.get(
            "/api/v1/memory",
            headers={**bearer(admin_key), "X-Impersonate-Tenant": "t\u00e9nant".encode("latin-1")},  # type: ignore[dict-item]
        )
        assert_envelope(response, 422, "impersonation_tenant_required")


class TestOffsetBounds:
    @pytest.mark.parametrize("path", ["/api/v1/memory", "/api/v1/knowledge", "/api/v1/sessions/s1/history"])
    async def test_offset_at_and_past_the_cap(
        self, http: httpx.AsyncClient, tenant: TenantHandle, path: str
    ) -> None:
        key = await tenant.agent()
        at = await http.get(path, params={"offset": limits.LIST_OFFSET_MAX}, headers=bearer(key))
        assert at.status_code == 200, at.text
        assert at.json()["data"] == []
        for offset in (limits.LIST_OFFSET_MAX + 1, 10**30):
            past = await http.get(path, params={"offset": offset}, headers=bearer(key))
            assert_envelope(past, 422, "validation_error")


class TestNesting:
    async def test_a_deeply_nested_body_is_invalid_json(
        self, http: httpx.AsyncClient, tenant: TenantHandle
    ) -> None:
        key = await tenant.agent()
        depth = 100_000
        body = b'{"text": "x", "metadata": {"a": ' + b"[" * depth + b"]" * depth + b"}}"
        response = await http.post(
            "/api/v1/memory", content=body, headers={**bearer(key), "Content-Type": "application/json"}
        )
        assert_envelope(response, 422, "invalid_json")
        assert await total_memories(http, key) == 0


class TestOpenApiDocument:
    async def test_every_operation_declares_the_envelope_security_and_links(
        self, http: httpx.AsyncClient
    ) -> None:
        doc = (await http.get("/openapi.json")).json()
        assert doc["components"]["securitySchemes"]["bearer"] == {"type": "http", "scheme": "bearer"}
        assert "HTTPValidationError" not in doc["components"]["schemas"]
        operations = [
            (path, method, op)
            for path, ops in doc["paths"].items()
            for method, op in ops.items()
            if path not in ("/healthz", "/readyz")
        ]
        assert len(operations) >= 28
        for path, method, op in operations:
            assert op["security"] == [{"bearer": []}], (path, method)
            for status in ("401", "404", "422", "429"):
                schema = op["responses"][status]["content"]["application/json"]["schema"]
                assert schema == {"$ref": "#/components/schemas/ErrorEnvelope"}, (path, method, status)
        created = doc["paths"]["/api/v1/memory"]["post"]["responses"]["201"]["links"]
        get_id = doc["paths"]["/api/v1/memory/{memory_id}"]["get"]["operationId"]
        assert created["GetMemory"] == {
            "operationId": get_id,
            "parameters": {"memory_id": "$response.body#/data/id"},
        }
