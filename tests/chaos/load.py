"""A steady agent load (writes, session appends, recalls, promotions) and the books it keeps, so a fault
run can prove afterwards that every acknowledged write exists exactly once and nothing is half-written.

Clients behave like real ones: a write that fails is retried with the same `Idempotency-Key` until it
is acknowledged or its deadline passes, so "acked exactly once" also covers retries across a crash.
"""

import asyncio
import time
import uuid
from dataclasses import dataclass, field

import asyncpg
import httpx

from conftest import bearer

RETRY_FOR_SECONDS = 45.0  # a client gives a write this long to be acknowledged, across the outage
FACT_TURNS = [
    ("user", "Remember this: the staging database runs on port 6543."),
    ("assistant", "Noted, staging database port 6543."),
    ("user", "Also, I prefer dark mode in every editor I use."),
    ("assistant", "Dark mode everywhere, got it."),
]


@dataclass
class Books:
    """What the clients were told: acknowledged and failed writes, recall outcomes."""

    acked_memories: dict[str, str] = field(default_factory=dict)  # text -> id
    failed_memories: set[str] = field(default_factory=set)
    acked_turns: set[str] = field(default_factory=set)  # content
    failed_turns: set[str] = field(default_factory=set)
    recalls_ok: int = 0
    recalls_failed: int = 0
    last_recall_ok: float = 0.0
    promotions: dict[str, str] = field(default_factory=dict)  # session_id -> workflow_id


class AgentLoad:
    """Concurrent clients of one agent key until :meth:`stop`."""

    def __init__(self, http: httpx.AsyncClient, key: str, label: str, writers: int = 3, recallers: int = 2):
        self.http = http
        self.key = key
        self.label = label
        self.books = Books()
        self._stop = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._writers = writers
        self._recallers = recallers

    def start(self) -> None:
        self._tasks += [asyncio.create_task(self._write_loop(i)) for i in range(self._writers)]
        self._tasks.append(asyncio.create_task(self._session_loop()))
        self._tasks += [asyncio.create_task(self._recall_loop()) for _ in range(self._recallers)]

    async def stop(self) -> None:
        self._stop.set()
        await asyncio.gather(*self._tasks)

    async def _post(self, path: str, body: dict[str, object], idem: str | None) -> httpx.Response | None:
        headers = bearer(self.key, **({"Idempotency-Key": idem} if idem else {}))
        try:
            return await self.http.post(path, json=body, headers=headers, timeout=15)
        except httpx.HTTPError:
            return None

    async def _acked(self, path: str, body: dict[str, object]) -> httpx.Response | None:
        """POST until a 2xx (same idempotency key every time) or the retry deadline."""
        idem = uuid.uuid4().hex
        deadline = time.monotonic() + RETRY_FOR_SECONDS
        while time.monotonic() < deadline:
            r = await self._post(path, body, idem)
            if r is not None and r.is_success:
                return r
            if r is not None and r.status_code < 500 and r.status_code not in (409, 429):
                return None  # a 4xx that is not "try again" is final
            await asyncio.sleep(0.2)
        return None

    async def _write_loop(self, worker: int) -> None:
        n = 0
        while not self._stop.is_set():
            text = f"{self.label} writer {worker} fact {n}: the parcel code is {uuid.uuid4().hex[:10]}"
            r = await self._acked("/api/v1/memory", {"text": text})
            if r is None:
                self.books.failed_memories.add(text)
            else:
                self.books.acked_memories[text] = r.json()["data"]["id"]
            n += 1

    async def _session_loop(self) -> None:
        session_id = f"{self.label}-load-session"
        n = 0
        while not self._stop.is_set():
            content = f"{self.label} turn {n} {uuid.uuid4().hex[:8]}"
            body = {"tier": "session", "session_id": session_id, "role": "user", "content": content}
            r = await self._acked("/api/v1/memory", {**body, "ttl_seconds": 3600})
            (self.books.acked_turns if r is not None else self.books.failed_turns).add(content)
            n += 1

    async def _recall_loop(self) -> None:
        while not self._stop.is_set():
            r = await self._post("/api/v1/memory/recall", {"query": "which parcel code?"}, None)
            if r is not None and r.status_code == 200:
                self.books.recalls_ok += 1
                self.books.last_recall_ok = time.monotonic()
            else:
                self.books.recalls_failed += 1
            await asyncio.sleep(0.1)

    async def promote(self, session_id: str) -> None:
        """Write a session with facts in it and start its promotion (retried like any write)."""
        for role, content in FACT_TURNS:
            body = {"tier": "session", "session_id": session_id, "role": role, "content": content}
            assert await self._acked("/api/v1/memory", {**body, "ttl_seconds": 3600}) is not None
        r = await self._acked("/api/v1/memory/promote", {"session_id": session_id})
        assert r is not None, "promotion was never accepted"
        self.books.promotions[session_id] = r.json()["data"]["workflow_id"]


@dataclass
class Audit:
    acked: int
    lost: int
    duplicated: int
    half_written: int
    unacked_complete: int


async def audit(db: asyncpg.Connection, tenant_id: str, books: Books, embed_timeout: float = 120) -> Audit:
    """Compare the database with the books once the system is quiet.

    Lost: an acknowledged memory or turn that is not stored. Duplicated: stored more than once. Half-written:
    a stored memory that never gets its vector (a write whose effects stopped half-way).
    """
    tenant = uuid.UUID(tenant_id)
    deadline = time.monotonic() + embed_timeout
    while True:  # every stored row must end up embedded: the worker and the sweep finish the job
        pending = await db.fetchval(
            "SELECT count(*) FROM memories WHERE tenant_id = $1 AND embedding_content_hash IS NULL", tenant
        )
        if pending == 0 or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.5)
    rows = await db.fetch(
        "SELECT text, count(*) AS n FROM memories WHERE tenant_id = $1 GROUP BY text", tenant
    )
    stored = {r["text"]: r["n"] for r in rows}
    turns = await db.fetch(
        "SELECT content, count(*) AS n FROM session_memories WHERE tenant_id = $1 GROUP BY content", tenant
    )
    stored_turns = {r["content"]: r["n"] for r in turns}
    acked = len(books.acked_memories) + len(books.acked_turns)
    lost = sum(text not in stored for text in books.acked_memories)
    lost += sum(content not in stored_turns for content in books.acked_turns)
    duplicated = sum(n - 1 for n in stored.values() if n > 1) + sum(
        n - 1 for n in stored_turns.values() if n > 1
    )
    unacked = sum(text in stored for text in books.failed_memories)
    unacked += sum(content in stored_turns for content in books.failed_turns)
    return Audit(acked, lost, duplicated, int(pending), unacked)
