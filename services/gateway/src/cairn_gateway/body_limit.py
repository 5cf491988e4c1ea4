"""Request bodies above the limit are refused before anything reads, parses or validates them.

A declared `Content-Length` over the limit is answered 413 without handing a byte on. A body without
one (chunked) is read here up to the limit and then handed on; one byte more and it is a 413, so no
route, dependency or other middleware ever sees an oversized body.
"""

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from cairn_contracts.errors import PayloadTooLarge
from cairn_gateway.errors import error_response


class BodyLimitMiddleware:
    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None:
            if declared > self.max_bytes:
                await self._refuse(scope, receive, send, drain=self._drain_declared(scope, declared))
                return
            # The server delivers no more than the declared length: nothing to count.
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await self._refuse(scope, receive, send, drain=message.get("more_body", False))
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        await self.app(scope, replay_body(b"".join(chunks), receive), send)

    @property
    def drain_bytes(self) -> int:
        return DRAIN_FACTOR * self.max_bytes

    def _drain_declared(self, scope: Scope, declared: int) -> bool:
        """Drain a declared body only if the client is sending it anyway and it is not absurdly large; a
        client that asked `Expect: 100-continue` is told 413 before it sends a byte."""
        if declared > self.drain_bytes:
            return False
        return not any(n == b"expect" and v.lower() == b"100-continue" for n, v in scope["headers"])

    async def _refuse(self, scope: Scope, receive: Receive, send: Send, *, drain: bool) -> None:
        """Answer 413. A client that writes its whole body before reading (most do) would see a reset
        instead of the answer if we closed mid-body, so a moderately oversized rest is read and thrown
        away first (never kept, never parsed); past `drain_bytes` the connection is just closed."""
        if drain:
            await _discard(receive, self.drain_bytes)
        error = PayloadTooLarge(f"request body is larger than {self.max_bytes} bytes")
        response = error_response(error.body(), {"Connection": "close"})
        await response(scope, receive, send)


# How much of a refused body is read and discarded so the client can read its 413 (see `_refuse`).
DRAIN_FACTOR = 16


async def _discard(receive: Receive, budget: int) -> None:
    while budget > 0:
        message = await receive()
        if message["type"] != "http.request" or not message.get("more_body", False):
            return
        budget -= len(message.get("body", b""))


def _content_length(scope: Scope) -> int | None:
    for name, value in scope["headers"]:
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None  # the server refuses a malformed length before we run
    return None


def replay_body(body: bytes, receive: Receive) -> Receive:
    """A `receive` that hands the app an already-read body once, then passes through (the disconnect)."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()  # after the body: the disconnect, whenever it comes

    return replay
