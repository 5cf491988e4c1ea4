"""Idempotent writes: `Idempotency-Key` on a POST that writes makes its repeats return the first response.

A route opts in with one line, `dependencies=[IDEMPOTENT]`. The dependency runs after authentication and
the rate limit, and claims (tenant, subject, key) in one atomic statement:

- the claim is new: the request runs; a 2xx response is stored and replayed to every repeat for 24 h,
  anything else releases the claim (an error wrote nothing, so a retry may run again);
- the key is stored with the same request hash: the stored response is returned (`Idempotent-Replayed:
  true`) and nothing runs;
- the key is stored with another hash (other body, path or query): 422 `idempotency_key_reused`;
- the first request is still in flight: the repeat waits for it (up to `WAIT_SECONDS`, then 409
  `idempotency_key_in_progress`). Its claim lapses at `LEASE_SECONDS` if the request that made it died.

Keys live per (tenant, subject), so two callers never collide. The response is stored by
`IdempotencyMiddleware` before the client sees it, so a client that got a success and repeats always gets
the replay.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import random
import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import Annotated, Any, cast

from fastapi import Depends, FastAPI, Header, Request
from fastapi.responses import Response
from sqlalchemy import Table, delete, func, select, text, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncEngine
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from cairn_contracts.envelope import WRITE_ID_HEADER
from cairn_contracts.errors import IdempotencyKeyInProgress, IdempotencyKeyReused, InvalidIdempotencyKey
from cairn_gateway.deps import WriteScopeDep
from cairn_scope import Scope as CairnScope
from cairn_storage.models import IdempotencyKey

log = logging.getLogger(__name__)

HEADER = "Idempotency-Key"
REPLAYED_HEADER = "Idempotent-Replayed"
KEY_MAX_CHARS = 255
TTL = timedelta(hours=24)
LEASE_SECONDS = 60.0  # longer than any write takes (service requests time out well before)
WAIT_SECONDS = 30.0
_CLAIM_STATE = "cairn_idempotency_claim"
_CLEANUP_EVERY = 200  # on average one claim in this many also deletes a batch of expired keys

_T = cast(Table, IdempotencyKey.__table__)


def request_hash(method: str, path: str, query: str, body: bytes) -> str:
    """What "the same request" means: method, path, query and the body's JSON value (key order and
    whitespace do not count; a body that is not JSON counts byte for byte)."""
    try:
        canonical = json.dumps(json.loads(body), sort_keys=True, separators=(",", ":")).encode()
    except ValueError:
        canonical = body
    digest = hashlib.sha256()
    for part in (method.encode(), path.encode(), query.encode(), canonical):
        digest.update(len(part).to_bytes(8, "big"))
        digest.update(part)
    return digest.hexdigest()


def _valid_key(key: str) -> bool:
    return 0 < len(key) <= KEY_MAX_CHARS and all(0x21 <= ord(c) <= 0x7E for c in key)


@dataclass
class Claim:
    """A claimed key: this request runs, then stores its response or releases the key."""

    store: IdempotencyStore
    scope: CairnScope
    key: str
    owner: uuid.UUID


class IdempotentReplay(Exception):
    """Raised by the dependency to answer with the stored response instead of running the route."""

    def __init__(self, status_code: int, body: bytes) -> None:
        super().__init__(status_code)
        self.status_code = status_code
        self.body = body


class IdempotencyStore:
    """The `idempotency_keys` table over an autocommit engine: every operation is one atomic statement."""

    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine

    def _pk(self, scope: CairnScope, key: str) -> Any:
        return (
            (_T.c.tenant_id == uuid.UUID(scope.tenant_id))
            & (_T.c.subject_id == scope.subject_id)
            & (_T.c.key == key)
        )

    async def claim(self, scope: CairnScope, key: str, hashed: str) -> Claim:
        """Claim the key, or raise: `IdempotentReplay` (stored), `IdempotencyKeyReused` (other request),
        `IdempotencyKeyInProgress` (the first request is still running after `WAIT_SECONDS`)."""
        owner = uuid.uuid4()
        now = func.clock_timestamp()
        row = {
            "tenant_id": uuid.UUID(scope.tenant_id),
            "subject_id": scope.subject_id,
            "key": key,
            "request_hash": hashed,
            "owner": owner,
            "locked_until": now + timedelta(seconds=LEASE_SECONDS),
            "expires_at": now + TTL,
        }
        fresh = insert(_T).values(row)
        # An expired key, or an in-flight claim whose request died, is taken over in the same statement.
        stmt = fresh.on_conflict_do_update(
            index_elements=[_T.c.tenant_id, _T.c.subject_id, _T.c.key],
            set_={
                "request_hash": fresh.excluded.request_hash,
                "owner": fresh.excluded.owner,
                "status_code": None,
                "response_body": None,
                "locked_until": fresh.excluded.locked_until,
                "expires_at": fresh.excluded.expires_at,
                "created_at": now,
            },
            where=(_T.c.expires_at < now) | (_T.c.status_code.is_(None) & (_T.c.locked_until < now)),
        ).returning(_T.c.owner)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + WAIT_SECONDS
        delay = 0.01
        while True:
            async with self._engine.connect() as conn:
                won = (await conn.execute(stmt)).scalar_one_or_none()
                if won == owner:
                    if random.randrange(_CLEANUP_EVERY) == 0:
                        await self._cleanup(conn)
                    return Claim(self, scope, key, owner)
                current = (
                    await conn.execute(
                        select(_T.c.request_hash, _T.c.status_code, _T.c.response_body).where(
                            self._pk(scope, key)
                        )
                    )
                ).one_or_none()
            if current is None:
                continue  # released between the two statements: claim again
            if current.request_hash != hashed:
                raise IdempotencyKeyReused()
            if current.status_code is not None:
                raise IdempotentReplay(current.status_code, current.response_body or b"")
            if loop.time() >= deadline:
                raise IdempotencyKeyInProgress()
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.2)

    async def complete(self, claim: Claim, status_code: int, body: bytes) -> None:
        async with self._engine.connect() as conn:
            await conn.execute(
                update(_T)
                .where(self._pk(claim.scope, claim.key) & (_T.c.owner == claim.owner))
                .values(status_code=status_code, response_body=body)
            )

    async def release(self, claim: Claim) -> None:
        async with self._engine.connect() as conn:
            await conn.execute(
                delete(_T).where(
                    self._pk(claim.scope, claim.key)
                    & (_T.c.owner == claim.owner)
                    & _T.c.status_code.is_(None)
                )
            )

    async def _cleanup(self, conn: Any) -> None:
        await conn.execute(
            text(
                "DELETE FROM idempotency_keys WHERE ctid IN "
                "(SELECT ctid FROM idempotency_keys WHERE expires_at < clock_timestamp() LIMIT 1000)"
            )
        )


async def idempotent_write(
    request: Request,
    scope: WriteScopeDep,
    idempotency_key: Annotated[
        str | None,
        Header(
            alias=HEADER,
            description="Makes the write idempotent for 24 h: a repeat with the same key and body returns "
            "the first response and writes nothing; the same key with another body is 422.",
        ),
    ] = None,
) -> None:
    """The opt-in dependency of a write route (`dependencies=[IDEMPOTENT]`)."""
    if idempotency_key is None:
        return
    if not _valid_key(idempotency_key):
        raise InvalidIdempotencyKey()
    store: IdempotencyStore = request.app.state.idempotency
    hashed = request_hash(request.method, request.url.path, request.url.query, await request.body())
    request.state.cairn_idempotency_claim = await store.claim(scope, idempotency_key, hashed)
    request.state.cairn_write_id = _write_id(scope, idempotency_key, hashed)


_WRITE_ID_NAMESPACE = uuid.UUID("6f0c2a52-3f7e-4d8a-9a51-0c8f3a7e5b21")


def _write_id(scope: CairnScope, key: str, hashed: str) -> uuid.UUID:
    # The request hash is part of it: the same key with another body (after a released claim) is
    # another write, never a replay of the first.
    return uuid.uuid5(_WRITE_ID_NAMESPACE, f"{scope.tenant_id}|{scope.subject_id}|{key}|{hashed}")


def write_headers(request: Request) -> dict[str, str]:
    """NATS headers that make the service's write idempotent too (empty without an Idempotency-Key).

    The gateway's claim alone cannot: a reply lost to a crash (the row committed, the service died before
    answering) is an error here, which releases the claim, and the client's retry would write a twin.
    """
    write_id = getattr(request.state, "cairn_write_id", None)
    return {WRITE_ID_HEADER: str(write_id)} if write_id is not None else {}


IDEMPOTENT = Depends(idempotent_write)


async def _replay(_: Request, exc: Exception) -> Response:
    assert isinstance(exc, IdempotentReplay)
    return Response(
        exc.body,
        status_code=exc.status_code,
        media_type="application/json",
        headers={REPLAYED_HEADER: "true"},
    )


class IdempotencyMiddleware:
    """Stores a claimed request's 2xx response before sending it on; releases the claim otherwise."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        state = scope.setdefault("state", {})
        start: Message | None = None
        chunks: list[bytes] = []
        done = False

        async def capture(message: Message) -> None:
            nonlocal start, done
            claim: Claim | None = state.get(_CLAIM_STATE)
            if claim is None or done:
                await send(message)
                return
            if message["type"] == "http.response.start":
                start = message
                return
            if message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))
                if message.get("more_body", False):
                    return
                assert start is not None
                done = True
                body = b"".join(chunks)
                status = int(start["status"])
                if 200 <= status < 300:
                    await claim.store.complete(claim, status, body)
                else:
                    await claim.store.release(claim)
                state.pop(_CLAIM_STATE, None)
                await send(start)
                await send({"type": "http.response.body", "body": body, "more_body": False})
                return
            await send(message)

        try:
            await self.app(scope, receive, capture)
        finally:
            claim = state.pop(_CLAIM_STATE, None)
            if claim is not None:  # the request died before answering: free the key for a retry
                try:
                    await asyncio.shield(claim.store.release(claim))
                except Exception:
                    log.exception("could not release an idempotency claim")


def install_idempotency(app: FastAPI) -> None:
    """Register the replay handler and the middleware (the store goes in `app.state.idempotency`)."""
    app.add_exception_handler(IdempotentReplay, _replay)
    app.add_middleware(IdempotencyMiddleware)
