"""The one place untrusted request input is checked before any route sees it.

Every `/api/` request has its path, query string and headers checked, and its body (already bounded by
`BodyLimitMiddleware`, which runs first), when it is JSON, walked (keys and values) for strings PostgreSQL
cannot store (`cairn_contracts.text`).
A route therefore never has to remember to refuse a NUL byte or a lone surrogate, and no such string can
reach a NATS message or a database row.
"""

import json
from urllib.parse import parse_qsl

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from cairn_contracts.errors import ErrorBody, ErrorCode
from cairn_contracts.text import find_unstorable, unstorable_reason
from cairn_gateway.body_limit import replay_body

GUARDED_PREFIX = "/api/"


def _problem_in_url_or_headers(scope: Scope) -> str | None:
    if (reason := unstorable_reason(scope["path"])) is not None:
        return f"path {reason}"
    query = scope.get("query_string", b"").decode("latin-1")
    for key, value in parse_qsl(query, keep_blank_values=True):
        for text in (key, value):
            if (reason := unstorable_reason(text)) is not None:
                return f"query parameter {key!r} {reason}"
    for name, value in scope.get("headers", []):
        if b"\x00" in value:
            return f"header {name.decode('latin-1')} must not contain NUL characters"
    return None


async def _reject(scope: Scope, receive: Receive, send: Send, code: str, status: int, message: str) -> None:
    body = ErrorBody(code=code, message=message, status=status)
    await JSONResponse({"error": body.model_dump()}, status_code=status)(scope, receive, send)


class InputGuardMiddleware:
    """Pure ASGI (the body is buffered once, then replayed to the app unchanged)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(GUARDED_PREFIX):
            await self.app(scope, receive, send)
            return
        if (problem := _problem_in_url_or_headers(scope)) is not None:
            await _reject(scope, receive, send, ErrorCode.validation_error, 422, problem)
            return
        body = await _read_body(receive)
        if body is None:
            return
        if body:
            try:
                parsed = json.loads(body)
            except RecursionError:
                await _reject(
                    scope, receive, send, ErrorCode.invalid_json, 422, "request body nests too deeply"
                )
                return
            except ValueError:
                parsed = None  # not JSON: the route's own validation answers invalid_json
            if (found := find_unstorable(parsed)) is not None:
                where, reason = found
                await _reject(scope, receive, send, ErrorCode.validation_error, 422, f"{where}: {reason}")
                return
        await self.app(scope, replay_body(body, receive), send)


async def _read_body(receive: Receive) -> bytes | None:
    """The whole body, or None when the client went away before sending it."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    return b"".join(chunks)
