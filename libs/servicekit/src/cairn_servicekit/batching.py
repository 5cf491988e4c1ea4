"""Micro-batching: writes that arrive while a batch runs share the next one (one transaction, one commit).

On two cores the write path is bound by CPU per write, and a statement (or a commit) per write costs
PostgreSQL a transaction and a WAL flush, and the caller a pool checkout and a round trip. `Coalescer` queues concurrently arriving
items and drains them in batches, at most `lanes` batches in flight. Nothing waits for a batch to fill:
an item that arrives to an idle service goes alone, on the single-statement path (no BEGIN or COMMIT),
and a batch is whatever queued while the previous one ran, so batches grow with the load.

Per-item semantics are those of the single path: when a statement of the batch fails for any reason
(one bad row, a deadlock, a lost connection), nothing of it was committed, and every item of it runs
again alone, so one bad write fails only itself and no write is ever half done. A failed COMMIT is
different: the batch may have committed, so its items fail with that error, as a lone write would.
"""

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from prometheus_client import Counter, Histogram
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

log = logging.getLogger(__name__)

BATCH_SIZE = Histogram(
    "cairn_write_batch_size",
    "Items (kind: memory, turn, rate_limit) committed together by one batch",
    ["kind"],
    buckets=(1, 2, 4, 8, 16, 32, 64, 128),
)
BATCH_FALLBACKS = Counter(
    "cairn_write_batch_fallbacks",
    "Batches whose transaction failed before its commit, so that each of their items ran again alone",
    ["kind"],
)


def declare_kinds(*kinds: str) -> None:
    """A closed label set, declared at import: dashboards and alerts see zeros before the first batch."""
    for kind in kinds:
        BATCH_SIZE.labels(kind)
        BATCH_FALLBACKS.labels(kind)


T = TypeVar("T")
R = TypeVar("R")


class CommitFailed(Exception):
    """Raised by a batch runner when its COMMIT failed: the outcome is unknown, so nothing runs again."""

    def __init__(self, cause: Exception) -> None:
        super().__init__(str(cause))
        self.cause = cause


@dataclass
class _Pending(Generic[T, R]):
    item: T
    done: asyncio.Future[R]


class Coalescer(Generic[T, R]):
    """Runs `run_batch` over items submitted concurrently, `run_one` over an item that is alone.

    `run_batch(items)` returns one result per item, in order, from one transaction (raising
    `CommitFailed` when its COMMIT failed); `run_one(item)` is the item's own transaction. `kind` labels
    the batch metrics.
    """

    def __init__(
        self,
        kind: str,
        run_one: Callable[[T], Awaitable[R]],
        run_batch: Callable[[Sequence[T]], Awaitable[list[R]]],
        *,
        max_batch: int,
        lanes: int,
    ) -> None:
        self._kind = kind
        self._run_one = run_one
        self._run_batch = run_batch
        self._max_batch = max_batch
        self._lanes = lanes
        self._queue: deque[_Pending[T, R]] = deque()
        self._running = 0
        self._tasks: set[asyncio.Task[None]] = set()

    async def submit(self, item: T) -> R:
        """The item's result once its batch (or its own transaction) committed; its error otherwise."""
        pending: _Pending[T, R] = _Pending(item, asyncio.get_running_loop().create_future())
        self._queue.append(pending)
        if self._running < self._lanes:
            self._running += 1
            task = asyncio.create_task(self._drain())
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        return await pending.done

    async def _drain(self) -> None:
        try:
            while self._queue:
                take = min(len(self._queue), self._max_batch)
                batch = [self._queue.popleft() for _ in range(take)]
                try:
                    await self._run(batch)
                except Exception as exc:  # a runner that broke its contract: its callers hear of it
                    log.exception("%s batch of %d: unexpected failure", self._kind, len(batch))
                    for pending in batch:
                        if not pending.done.done():
                            pending.done.set_exception(exc)
                except BaseException:  # cancelled (shutdown): nobody waits forever
                    for pending in batch:
                        pending.done.cancel()
                    raise
        finally:
            self._running -= 1

    async def _run(self, batch: list[_Pending[T, R]]) -> None:
        BATCH_SIZE.labels(self._kind).observe(len(batch))
        if len(batch) == 1:
            await self._alone(batch[0])
            return
        try:
            results = await self._run_batch([p.item for p in batch])
        except CommitFailed as exc:
            for pending in batch:
                if not pending.done.done():
                    pending.done.set_exception(exc.cause)
            return
        except Exception as exc:
            # Nothing of the batch committed: each item runs alone, so only a bad one fails.
            BATCH_FALLBACKS.labels(self._kind).inc()
            log.warning(
                "%s batch of %d failed (%s: %s); running each alone", self._kind, len(batch),
                type(exc).__name__, exc,
            )  # fmt: skip
            await asyncio.gather(*(self._alone(p) for p in batch))
            return
        for pending, result in zip(batch, results, strict=True):
            if not pending.done.done():
                pending.done.set_result(result)

    async def _alone(self, pending: _Pending[T, R]) -> None:
        try:
            result = await self._run_one(pending.item)
        except Exception as exc:
            if not pending.done.done():
                pending.done.set_exception(exc)
            return
        if not pending.done.done():
            pending.done.set_result(result)


def distinct_rounds(keys: Sequence[Hashable]) -> list[list[int]]:
    """Indexes of `keys` in rounds that name each key at most once (a repeat goes to the next round), in
    submission order inside each round: one statement per round never names a row twice."""
    out: list[list[int]] = []
    seen: list[set[Hashable]] = []
    for i, key in enumerate(keys):
        level = next((n for n, names in enumerate(seen) if key not in names), len(seen))
        if level == len(seen):
            out.append([])
            seen.append(set())
        out[level].append(i)
        seen[level].add(key)
    return out


class Transaction(Protocol):
    """An open transaction (SQLAlchemy's `AsyncTransaction`, asyncpg's `Transaction`)."""

    async def commit(self) -> None: ...

    async def rollback(self) -> None: ...


async def committed(transaction: Transaction, work: Callable[[], Awaitable[R]]) -> R:
    """`work` in the open `transaction`, then COMMIT: rolled back if `work` fails, and `CommitFailed` if
    the COMMIT itself fails (the outcome is unknown, so a batch must fail every item)."""
    try:
        result = await work()
    except BaseException:
        await transaction.rollback()
        raise
    try:
        await transaction.commit()
    except Exception as exc:
        raise CommitFailed(exc) from exc
    return result


async def in_one_transaction(engine: AsyncEngine, work: Callable[[AsyncConnection], Awaitable[R]]) -> R:
    """`work` on one connection in one transaction; a failed COMMIT raises `CommitFailed`."""
    async with engine.connect() as conn:
        return await committed(await conn.begin(), lambda: work(conn))
