"""The gateway's body limit (default 1 MiB) runs before any handler, dependency or validation: past it
is 413 `payload_too_large` in the error envelope whether the body declares its length or streams."""

import json
from collections.abc import AsyncIterator

import httpx

from conftest import TenantHandle, bearer

LIMIT = 1024 * 1024  # GatewaySettings.max_body_bytes default; the test stack does not override it


def body_of_size(size: int) -> bytes:
    """A valid JSON memory body of exactly `size` bytes (its text far past the 16 KiB text limit)."""
    overhead = len(json.dumps({"text": ""}).encode())
    body = json.dumps({"text": "a" * (size - overhead)}).encode()
    assert len(body) == size
    return body


async def chunked(body: bytes, chunk: int = 64 * 1024) -> AsyncIterator[bytes]:
    """Sent without Content-Length (Transfer-Encoding: chunked)."""
    for start in range(0, len(body), chunk):
        yield body[start : start + chunk]


def assert_too_large(response: httpx.Response) -> None:
    assert response.status_code == 413, response.text
    assert response.json() == {
        "error": {
            "code": "payload_too_large",
            "message": f"request body is larger than {LIMIT} bytes",
            "status": 413,
        }
    }


async def total(http: httpx.AsyncClient, key: str) -> int:
    page = await http.get("/api/v1/memory", params={"limit": 1}, headers=bearer(key))
    return int(page.json()["meta"]["total_count"])


async def test_two_mib_is_413_before_auth_parsing_or_the_handler(
    http: httpx.AsyncClient, tenant: TenantHandle
) -> None:
    key = await tenant.agent()
    two_mib = body_of_size(2 * LIMIT)
    headers = {"Content-Type": "application/json"}
    # With a valid key, with no key (auth would say 401) and with broken JSON (parsing would say 422):
    # the limit answers first every time.
    assert_too_large(await http.post("/api/v1/memory", content=two_mib, headers={**headers, **bearer(key)}))
    assert_too_large(await http.post("/api/v1/memory", content=two_mib, headers=headers))
    assert_too_large(await http.post("/api/v1/memory", content=b"{" * (2 * LIMIT), headers=headers))
    assert await total(http, key) == 0


async def test_two_mib_streamed_without_content_length_is_413(
    http: httpx.AsyncClient, tenant: TenantHandle
) -> None:
    key = await tenant.agent()
    response = await http.post(
        "/api/v1/memory",
        content=chunked(body_of_size(2 * LIMIT)),
        headers={"Content-Type": "application/json", **bearer(key)},
    )
    assert "content-length" not in response.request.headers
    assert_too_large(response)
    assert await total(http, key) == 0


async def test_a_body_at_the_limit_reaches_the_handler_and_one_byte_more_does_not(
    http: httpx.AsyncClient, tenant: TenantHandle
) -> None:
    key = await tenant.agent()
    headers = {"Content-Type": "application/json", **bearer(key)}
    for send in (lambda b: b, chunked):
        at_limit = await http.post("/api/v1/memory", content=send(body_of_size(LIMIT)), headers=headers)
        # Past the body limit check: the route's own validation answers (the text is over 16 KiB).
        assert at_limit.status_code == 422, at_limit.text
        assert at_limit.json()["error"]["code"] == "text_too_long"
        assert_too_large(
            await http.post("/api/v1/memory", content=send(body_of_size(LIMIT + 1)), headers=headers)
        )
    assert await total(http, key) == 0


async def test_small_bodies_and_bodyless_requests_are_untouched(
    http: httpx.AsyncClient, tenant: TenantHandle
) -> None:
    key = await tenant.agent()
    headers = {"Content-Type": "application/json", **bearer(key)}
    created = await http.post(
        "/api/v1/memory", content=chunked(b'{"text": "streamed small"}'), headers=headers
    )
    assert created.status_code == 201, created.text
    assert (await http.get("/api/v1/whoami", headers=bearer(key))).status_code == 200
    assert await total(http, key) == 1
