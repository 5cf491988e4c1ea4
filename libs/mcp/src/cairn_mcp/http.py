"""The MCP server over Streamable HTTP, for the gateway to mount at `/mcp`.

Every request must carry the caller's key as `Authorization: Bearer <key>` (401 otherwise, before any MCP
processing); each tool call then acts with exactly that key through the SDK. The transport is stateless
(no MCP session lives in a gateway process), so any replica can serve any request.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import httpx
from mcp.server.mcpserver import Context
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import Receive, Scope, Send

from cairn_client import AsyncCairnClient
from cairn_mcp.tools import build_server

# Raises (any exception) when the bearer token is not a valid key.
Verifier = Callable[[str], Awaitable[object]]

UNAUTHENTICATED = {
    "error": {"code": "unauthenticated", "message": "missing or invalid API key", "status": 401}
}


def bearer(authorization: str | None) -> str | None:
    if not authorization or not authorization.startswith("Bearer "):
        return None
    token = authorization.removeprefix("Bearer ").strip()
    return token or None


class McpHttp:
    """An ASGI app serving MCP over Streamable HTTP, with the caller's key per request.

    Args:
        client: the SDK client the tools call REST with; each call uses a copy carrying the caller's key
            (`with_options`), so the connection pool is shared.
        verify: checks a bearer token before MCP sees the request (the gateway passes its authenticator).
    """

    def __init__(self, client: AsyncCairnClient, verify: Verifier | None = None) -> None:
        self._client = client
        self._verify = verify
        self.server = build_server(self._client_for)
        # Only builds the session manager; the Starlette app it returns is not used (we route ourselves).
        self.server.streamable_http_app(
            streamable_http_path="/",
            stateless_http=True,
            json_response=True,
            # The bearer key, not the Host header, is what protects this endpoint.
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )

    @classmethod
    def in_process(cls, app: object, verify: Verifier | None = None) -> McpHttp:
        """Tools call the REST API of `app` (the gateway itself) in process, through httpx's ASGI transport."""
        transport = httpx.ASGITransport(app=app)  # type: ignore[arg-type]
        return cls(AsyncCairnClient("http://cairn-gateway", api_key="", transport=transport), verify)

    def _client_for(self, ctx: Context) -> AsyncCairnClient:
        headers = ctx.headers or {}
        key = bearer(headers.get("authorization"))
        if key is None:  # the edge refuses such requests; this is the second lock
            raise PermissionError("missing API key")
        return self._client.with_options(api_key=key)

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Run the MCP session manager (enter once, in the host application's lifespan)."""
        async with self.server.session_manager.run():
            try:
                yield
            finally:
                await self._client.aclose()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
            key = bearer(headers.get("authorization"))
            ok = key is not None
            if ok and self._verify is not None:
                try:
                    await self._verify(f"Bearer {key}")
                except Exception:
                    ok = False
            if not ok:
                await _send_json(send, 401, UNAUTHENTICATED, {"www-authenticate": "Bearer"})
                return
        await self.server.session_manager.handle_request(scope, receive, send)


async def _send_json(send: Send, status: int, body: object, headers: dict[str, str]) -> None:
    payload = json.dumps(body).encode()
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
    raw += [(k.encode(), v.encode()) for k, v in headers.items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": payload})
