"""Exact nearest-neighbour search from a per-replica copy of a scope's vectors, and the versioned cache
that keeps such copies honest.

pgvector here scores a 384-dimension cosine distance in about 0.6 µs (no SIMD in this build), so an exact
scan of 10,000 vectors costs ~6 ms of PostgreSQL CPU, and an HNSW walk at a high `ef_search` costs more;
numpy scores the same matrix in one matrix-vector product. A copy is an accelerator, never a source of
truth: its owner keeps a version per scope that triggers move on every write that could change a search
(migrations 0016 and 0018), reads it before each search, and uses a copy only when it was loaded at that
version or later. Knowledge search (cairn_knowledge.vector_cache) and large-subject recall
(cairn_recall.vector_copy) build on this module.
"""

import asyncio
import logging
import time
import uuid
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable, Sequence
from typing import Generic, Protocol, TypeVar

import numpy as np
import numpy.typing as npt

Matrix = npt.NDArray[np.float32]
log = logging.getLogger(__name__)


def unit_rows(vectors: Sequence[bytes], dim: int) -> Matrix:
    """Rows of unit length from pgvector's binary form (`vector_send`: int16 dim, int16 unused, then dim
    big-endian float4); `dim` shapes the matrix of an empty copy."""
    if not vectors:
        return np.zeros((0, dim), dtype=np.float32)
    dim = int.from_bytes(vectors[0][:2], "big")
    # vector_send's two int16 (dim, unused) are one float4's width: drop that column.
    raw = np.frombuffer(b"".join(vectors), dtype=">f4")
    matrix = raw.reshape(len(vectors), dim + 1)[:, 1:].astype(np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    unit: Matrix = (matrix / norms).astype(np.float32)
    return unit


R = TypeVar("R")


def grouped(
    rows: Sequence[R], key: Callable[[R], uuid.UUID]
) -> tuple[list[R], list[uuid.UUID], list[int], list[R]]:
    """`rows` sorted by `key` so each group's rows are adjacent: (the sorted rows, the group ids, each
    group's first row, each group's first row itself), the layout `group_distances` reads."""
    ordered = sorted(rows, key=key)
    ids: list[uuid.UUID] = []
    starts: list[int] = []
    heads: list[R] = []
    for i, row in enumerate(ordered):
        if not ids or ids[-1] != key(row):
            ids.append(key(row))
            starts.append(i)
            heads.append(row)
    return ordered, ids, starts, heads


def group_distances(
    matrix: Matrix, starts: npt.NDArray[np.intp], query: Sequence[float]
) -> npt.NDArray[np.float32]:
    """The cosine distance of each group's nearest row to `query`; a group's rows are adjacent and start at
    `starts` (one row per group when there are as many groups as rows)."""
    q = np.asarray(query, dtype=np.float32)
    norm = float(np.linalg.norm(q))
    distances: npt.NDArray[np.float32] = (1.0 - matrix @ (q / (norm or 1.0))).astype(np.float32, copy=False)
    if len(starts) == matrix.shape[0]:
        return distances
    best: npt.NDArray[np.float32] = np.minimum.reduceat(distances, starts)
    return best


class BatchedDistances:
    """Queries against one copy that arrive while a product runs are scored together by the next one.

    Scoring a query reads the whole copy from memory, so a product over several queries costs little more
    than over one. Nothing waits for a batch to fill: a query that finds the copy idle goes alone, and a
    batch is whatever queued while the previous one ran. Products run on a worker thread (numpy and
    onnxruntime release the GIL), so the event loop goes on serving meanwhile.

    `product` scores unit queries (the rows of its argument) and returns an array whose first axis is the
    query (the recall copy's int8 bounds, `cairn_recall.vector_copy`)."""

    def __init__(self, product: Callable[[Matrix], npt.NDArray[np.float32]]) -> None:
        self._product = product
        self._queue: list[tuple[npt.NDArray[np.float32], asyncio.Future[npt.NDArray[np.float32]]]] = []
        self._drainer: asyncio.Task[None] | None = None
        self.batches = 0  # products run (tests read it)

    async def best(self, query: Sequence[float] | npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """The query's slice of `product`, the query scaled to unit length first."""
        q = np.asarray(query, dtype=np.float32)
        norm = float(np.linalg.norm(q))
        done: asyncio.Future[npt.NDArray[np.float32]] = asyncio.get_running_loop().create_future()
        self._queue.append((q / (norm or 1.0), done))
        if self._drainer is None:
            self._drainer = asyncio.create_task(self._drain())
        return await done

    async def _drain(self) -> None:
        try:
            while self._queue:
                batch, self._queue = self._queue, []
                queries = np.stack([q for q, _ in batch])
                self.batches += 1
                try:
                    result = await asyncio.to_thread(self._product, queries)
                except Exception as exc:  # each waiting query fails with it; the next batch tries again
                    for _, done in batch:
                        if not done.done():
                            done.set_exception(exc)
                    continue
                for j, (_, done) in enumerate(batch):
                    if not done.done():  # a cancelled recall stopped waiting
                        done.set_result(result[j])
        finally:
            self._drainer = None


def nearest(best: npt.NDArray[np.float32], ids: Sequence[uuid.UUID], limit: int) -> list[tuple[int, float]]:
    """The `limit` groups nearest by `best` (inf: excluded), ties by id: the order of an exact SQL top-k
    `ORDER BY distance, id`. Returns (group index, distance)."""
    shown = int(np.count_nonzero(np.isfinite(best)))
    if shown == 0 or limit <= 0:
        return []
    k = min(limit, shown)
    # Every group as near as the k-th is kept before the id tie-break, so ties at the cut stay exact.
    kth = float(np.partition(best, k - 1)[k - 1])
    close = np.flatnonzero(best <= kth)
    ranked = sorted(zip(best[close].tolist(), [ids[i] for i in close.tolist()], close.tolist(), strict=True))
    return [(i, distance) for distance, _, i in ranked[:k]]


class Versioned(Protocol):
    @property
    def version(self) -> int: ...

    @property
    def rows(self) -> int: ...


K = TypeVar("K", bound=Hashable)
V = TypeVar("V", bound=Versioned)


Loader = Callable[[K], Awaitable[V | None]]  # None: too large to copy


class VersionedCopies(Generic[K, V]):
    """Per-replica copies keyed by scope, least recently used out past `max_rows` vectors in all; one load
    per key at a time. A key whose copy does not fit (its loader said so, or it alone is past `max_rows`)
    is searched in SQL, and not loaded again for `refusal_seconds`."""

    def __init__(self, max_rows: int, refusal_seconds: float = 600.0, load_cost_factor: float = 20.0) -> None:
        self.max_rows = max_rows
        self.refusal_seconds = refusal_seconds
        # Background reloads of a key are spaced by at least this many times its last load's duration, so
        # a large copy whose scope keeps changing (an agent writing while it recalls) costs its database
        # at most ~1/factor of a core in reloads, whatever `min_interval` says.
        self.load_cost_factor = load_cost_factor
        self._load_seconds: dict[K, float] = {}
        self._copies: OrderedDict[K, V] = OrderedDict()
        self._locks: dict[K, asyncio.Lock] = {}
        self._loading: dict[K, asyncio.Task[None]] = {}
        self._last_load: dict[K, float] = {}
        self._refused: dict[K, float] = {}
        self.loads = 0  # how many times a copy was (re)loaded: tests and metrics read it

    @property
    def enabled(self) -> bool:
        return self.max_rows > 0

    def rows(self) -> int:
        return sum(copy.rows for copy in self._copies.values())

    def refuses(self, key: K) -> bool:
        """Whether `key` did not fit lately (its searches go to SQL without asking for a version)."""
        refused = self._refused.get(key)
        if refused is None:
            return False
        if time.monotonic() - refused < self.refusal_seconds:
            return True
        del self._refused[key]
        return False

    def _current(self, key: K, version: int) -> V | None:
        copy = self._copies.get(key)
        if copy is None or copy.version < version:
            return None
        self._copies.move_to_end(key)
        return copy

    async def at_least(self, key: K, version: int, load: Loader[K, V]) -> V | None:
        """The copy at `version` or later, loading it first when this replica has none that recent; None
        when it does not fit in the cache at all (the caller searches in SQL)."""
        current = self._current(key, version)
        if current is not None or self.refuses(key):
            return current
        async with self._locks.setdefault(key, asyncio.Lock()):
            current = self._current(key, version)
            if current is None:
                await self._load(key, load)
                current = self._current(key, version)
        return current

    def if_current(self, key: K, version: int, load: Loader[K, V], min_interval: float) -> V | None:
        """The copy when it is at `version` or later; otherwise None (the caller searches in SQL this time)
        and a load starts in the background, unless one is running or the last began under `min_interval`
        seconds ago (a scope whose version keeps moving, as during an embedding backlog, is not reloaded
        on every search), or under `load_cost_factor` times the last load's duration."""
        current = self._current(key, version)
        if current is not None or key in self._loading or self.refuses(key):
            return current
        spacing = max(min_interval, self.load_cost_factor * self._load_seconds.get(key, 0.0))
        if time.monotonic() - self._last_load.get(key, -spacing) < spacing:
            return None
        task = asyncio.create_task(self._load_logged(key, load))
        self._loading[key] = task
        task.add_done_callback(lambda _: self._loading.pop(key, None))
        return None

    async def settled(self) -> None:
        """Wait for the background loads running now (tests, shutdown)."""
        await asyncio.gather(*self._loading.values(), return_exceptions=True)

    async def _load_logged(self, key: K, load: Loader[K, V]) -> None:
        try:
            await self._load(key, load)
        except Exception:  # the searches go on in SQL; the next stale one tries again
            log.exception("loading a vector copy failed")

    async def _load(self, key: K, load: Loader[K, V]) -> None:
        started = self._last_load[key] = time.monotonic()
        copy = await load(key)
        self._load_seconds[key] = time.monotonic() - started
        self.loads += 1
        took_ms = self._load_seconds[key] * 1000
        if copy is None:
            log.info("%s: a copy too large to keep, read in %.0f ms", type(self).__name__, took_ms)
        else:
            log.info("%s: loaded %d rows in %.0f ms", type(self).__name__, copy.rows, took_ms)
        self._copies.pop(key, None)
        if copy is None or copy.rows > self.max_rows:
            self._refused[key] = time.monotonic()
            return
        self._copies[key] = copy
        while self.rows() > self.max_rows:
            evicted, _ = self._copies.popitem(last=False)
            self._locks.pop(evicted, None)
            self._last_load.pop(evicted, None)
            self._load_seconds.pop(evicted, None)
