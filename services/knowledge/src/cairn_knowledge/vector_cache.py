"""Exact semantic search of small tenants from an in-memory copy of their published article vectors.

pgvector here scores a 384-dimension cosine distance in about 0.6 µs, so the exact scan of a tenant with
10,000 articles costs ~8 ms of PostgreSQL CPU per search (docs/performance.md); the same scores are one
matrix-vector product in numpy, well under a millisecond. The copy is an accelerator, never a source of
truth: every search first reads the tenant's `knowledge_versions.version` (moved by triggers on every write
to its articles and chunks, migration 0016) and uses a copy loaded at that version or later; otherwise it
reloads the tenant first (one load per tenant at a time), reading the version and the rows in one snapshot.
So a search sees every write committed before it started, on whichever replica it runs.

Only published rows are copied (drafts are never searched); which of them a subject may see (tenant-visible
or its own owner articles) and the project partition are applied per search, as in the SQL statement.
"""

import asyncio
import uuid
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

Matrix = npt.NDArray[np.float32]


@dataclass(frozen=True)
class VectorRow:
    """One published vector of a tenant: an article's chunk 0 or one of its further chunks."""

    article_id: uuid.UUID
    tenant_visible: bool
    owner_subject_id: str | None
    project_id: uuid.UUID | None
    vector: bytes  # pgvector's binary form (vector_send): int16 dim, int16 unused, dim big-endian float4


def _unit_rows(rows: Sequence[VectorRow]) -> Matrix:
    dim = int.from_bytes(rows[0].vector[:2], "big")
    # vector_send's two int16 (dim, unused) are one float4's width: drop that column.
    raw = np.frombuffer(b"".join(r.vector for r in rows), dtype=">f4")
    matrix = raw.reshape(len(rows), dim + 1)[:, 1:].astype(np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    unit: Matrix = (matrix / norms).astype(np.float32)
    return unit


@dataclass
class TenantVectors:
    """A tenant's published vectors at one version, grouped by article (rows of one article adjacent)."""

    version: int
    article_ids: list[uuid.UUID]
    matrix: Matrix  # unit rows
    starts: npt.NDArray[np.intp]  # first row of each article (for a per-article minimum)
    tenant_visible: npt.NDArray[np.bool_]
    owned: dict[str, npt.NDArray[np.intp]]  # owner subject -> its owner-visible articles
    global_partition: npt.NDArray[np.bool_]  # project_id IS NULL
    projects: dict[uuid.UUID, npt.NDArray[np.intp]]

    @classmethod
    def build(cls, version: int, rows: Sequence[VectorRow], dim: int) -> "TenantVectors":
        """`dim` shapes the empty matrix of a tenant with no vectors; rows carry their own."""
        ordered = sorted(rows, key=lambda r: r.article_id)
        ids: list[uuid.UUID] = []
        starts: list[int] = []
        heads: list[VectorRow] = []
        for i, row in enumerate(ordered):
            if not ids or ids[-1] != row.article_id:
                ids.append(row.article_id)
                starts.append(i)
                heads.append(row)
        owned: dict[str, list[int]] = {}
        projects: dict[uuid.UUID, list[int]] = {}
        for i, head in enumerate(heads):
            if not head.tenant_visible and head.owner_subject_id is not None:
                owned.setdefault(head.owner_subject_id, []).append(i)
            if head.project_id is not None:
                projects.setdefault(head.project_id, []).append(i)
        return cls(
            version=version,
            article_ids=ids,
            matrix=_unit_rows(ordered) if ordered else np.zeros((0, dim), dtype=np.float32),
            starts=np.asarray(starts, dtype=np.intp),
            tenant_visible=np.asarray([h.tenant_visible for h in heads], dtype=np.bool_),
            owned={k: np.asarray(v, dtype=np.intp) for k, v in owned.items()},
            global_partition=np.asarray([h.project_id is None for h in heads], dtype=np.bool_),
            projects={k: np.asarray(v, dtype=np.intp) for k, v in projects.items()},
        )

    @property
    def rows(self) -> int:
        return int(self.matrix.shape[0])

    @property
    def single_rows(self) -> bool:
        """Every article has one vector (no chunks): no per-article minimum to take."""
        return self.rows == len(self.article_ids)

    def nearest(
        self, subject_id: str, project_id: uuid.UUID | None, query: Sequence[float], limit: int
    ) -> list[tuple[uuid.UUID, float]]:
        """The `limit` visible articles nearest to `query` by their best vector's cosine distance, ties by
        id: the order of the SQL exact statement."""
        if not self.article_ids or limit <= 0:
            return []
        q = np.asarray(query, dtype=np.float32)
        norm = float(np.linalg.norm(q))
        distances = 1.0 - self.matrix @ (q / (norm or 1.0))
        best = distances if self.single_rows else np.minimum.reduceat(distances, self.starts)
        visible = self.tenant_visible.copy()
        if subject_id in self.owned:
            visible[self.owned[subject_id]] = True
        partition = self.global_partition.copy()
        if project_id is not None and project_id in self.projects:
            partition[self.projects[project_id]] = True
        best = np.where(visible & partition, best, np.inf)
        shown = int(np.count_nonzero(np.isfinite(best)))
        if shown == 0:
            return []
        k = min(limit, shown)
        # Every row as near as the k-th is kept before the id tie-break, so ties at the cut stay exact.
        kth = float(np.partition(best, k - 1)[k - 1])
        close = np.flatnonzero(best <= kth)
        ranked = sorted(((float(best[i]), self.article_ids[i]) for i in close), key=lambda t: (t[0], t[1]))
        return [(article, distance) for distance, article in ranked[:k]]


Loader = Callable[[str], Awaitable[TenantVectors]]


class ArticleVectorCache:
    """Per-replica copies of small tenants' vectors, least recently used out past `max_rows` in all."""

    def __init__(self, max_rows: int) -> None:
        self.max_rows = max_rows
        self._tenants: OrderedDict[str, TenantVectors] = OrderedDict()
        self._locks: dict[str, asyncio.Lock] = {}
        self.loads = 0  # how many times a tenant was (re)loaded: tests and metrics read it

    @property
    def enabled(self) -> bool:
        return self.max_rows > 0

    def _rows(self) -> int:
        return sum(t.rows for t in self._tenants.values())

    async def at_least(self, tenant_id: str, version: int, load: Loader) -> TenantVectors | None:
        """The tenant's copy at `version` or later, loading it when this replica has none that recent;
        None when it does not fit in the cache at all (the caller searches in SQL)."""
        cached = self._tenants.get(tenant_id)
        if cached is not None and cached.version >= version:
            self._tenants.move_to_end(tenant_id)
            return cached
        lock = self._locks.setdefault(tenant_id, asyncio.Lock())
        async with lock:
            cached = self._tenants.get(tenant_id)
            if cached is None or cached.version < version:
                cached = await load(tenant_id)
                self.loads += 1
                self._tenants.pop(tenant_id, None)
                if cached.rows > self.max_rows:
                    return None
                self._tenants[tenant_id] = cached
                while self._rows() > self.max_rows:
                    evicted, _ = self._tenants.popitem(last=False)
                    self._locks.pop(evicted, None)
        return cached
