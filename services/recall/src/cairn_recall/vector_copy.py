"""Exact semantic side for large subjects from this replica's copy of their live vectors.

A large subject's semantic side walked its own two HNSW graphs (memory heads and chunks) at `ef_search`
400: on 10,000 conversation turns with 8,600 chunk vectors that was ~35 cpu-ms of PostgreSQL per recall,
most of a recall's cost (docs/performance.md). The same subject scored exactly from a copy is one
matrix-vector product over its ~18,600 unit rows (a few ms of one core), and exact rather than approximate.

The copy is never a source of truth (cairn_storage.vector_copy): each recall reads the subject's version
(migration 0018: triggers move it on every write that can change this search) and uses the copy only
when it was loaded at that version or later. Otherwise the recall takes the SQL path and a reload starts
in the background (single-flight, spaced by `subject_copy_reload_seconds`), so a subject being embedded
during a write burst is served from SQL until its vectors settle, and never waits for a load.
"""

import math
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from cairn_recall.int8_scores import Int8Rows
from cairn_recall.ranking import Ranked, speaker_of
from cairn_storage.vector_copy import (
    BatchedDistances,
    Matrix,
    VersionedCopies,
    group_distances,
    grouped,
    nearest,
    unit_rows,
)


@dataclass(frozen=True)
class SubjectVectorRow:
    """One live vector of the subject: a memory's head or one of its chunks."""

    memory_id: uuid.UUID
    project_id: uuid.UUID | None
    head: str  # what `speaker_of` reads
    role: str | None
    vector: bytes  # pgvector's binary form (vector_send)


@dataclass(frozen=True)
class Similarities:
    """Each memory's cosine similarity to one query, by its best vector (head or chunk): what
    `RecallStore.rows_with_scores` computes in SQL; None for a memory without a vector. `best` holds the
    distances computed with the ranking (NaN where none was); `exact` computes the others on demand."""

    index: dict[uuid.UUID, int]
    best: npt.NDArray[np.float32]  # distances
    exact: Callable[[int], float] | None = None

    def of(self, memory_id: uuid.UUID) -> float | None:
        i = self.index.get(memory_id)
        if i is None:
            return None
        distance = float(self.best[i])
        if math.isnan(distance) and self.exact is not None:
            distance = self.exact(i)
        return 1.0 - distance


@dataclass
class SubjectVectors:
    """A subject's live vectors at one version, grouped by memory (a memory's rows adjacent)."""

    version: int
    memory_ids: list[uuid.UUID]
    speakers: list[str | None]
    matrix: Matrix  # unit rows
    starts: npt.NDArray[np.intp]  # first row of each memory
    global_partition: npt.NDArray[np.bool_]  # project_id IS NULL
    projects: dict[uuid.UUID, npt.NDArray[np.intp]]
    # Concurrent recalls of the subject share one int8 product of bounds (cairn_storage.vector_copy).
    scorer: BatchedDistances = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._int8 = Int8Rows(self.matrix)
        self.scorer = BatchedDistances(self._distance_bounds)
        self._index = {memory_id: i for i, memory_id in enumerate(self.memory_ids)}
        self._ends = np.append(self.starts[1:], self.matrix.shape[0]).astype(np.intp)
        self._row_memory = np.repeat(np.arange(len(self.starts), dtype=np.intp), self._ends - self.starts)

    @classmethod
    def build(cls, version: int, rows: Sequence[SubjectVectorRow], dim: int) -> "SubjectVectors":
        ordered, ids, starts, heads = grouped(rows, lambda r: r.memory_id)
        projects: dict[uuid.UUID, list[int]] = {}
        for i, head in enumerate(heads):
            if head.project_id is not None:
                projects.setdefault(head.project_id, []).append(i)
        return cls(
            version=version,
            memory_ids=ids,
            speakers=[speaker_of(h.head, h.role) for h in heads],
            matrix=unit_rows([r.vector for r in ordered], dim),
            starts=np.asarray(starts, dtype=np.intp),
            global_partition=np.asarray([h.project_id is None for h in heads], dtype=np.bool_),
            projects={k: np.asarray(v, dtype=np.intp) for k, v in projects.items()},
        )

    @property
    def rows(self) -> int:
        return int(self.matrix.shape[0])

    def nearest(self, project_id: uuid.UUID | None, query: Sequence[float], limit: int) -> list[Ranked]:
        """The `limit` memories of the partition (global, plus `project_id`'s) nearest to `query` by their
        best vector's cosine distance, ties by id: what `RecallStore.exact` returns for the live rows."""
        if not self.memory_ids or limit <= 0:
            return []
        return self._ranked(group_distances(self.matrix, self.starts, query), project_id, limit)

    async def nearest_batched(
        self, project_id: uuid.UUID | None, query: Sequence[float], limit: int
    ) -> tuple[list[Ranked], Similarities]:
        """`nearest`, exactly, and every memory's similarity to the query (what the hits report as their
        score). The subject's other recalls in flight share one int8 product, whose error bounds leave a
        few memories that could be among the nearest; only their float32 rows are scored (`int8_scores`)."""
        if not self.memory_ids:
            return [], Similarities({}, np.zeros(0, dtype=np.float32))
        q = np.asarray(query, dtype=np.float32)
        q = q / (float(np.linalg.norm(q)) or 1.0)
        bounds = await self.scorer.best(q)
        lower, upper = bounds[: self.rows], bounds[self.rows :]
        best = np.full(len(self.memory_ids), np.nan, dtype=np.float32)
        ranked: list[Ranked] = []
        shown = self._partition(project_id)
        if shown is not None:
            upper = np.where(shown, upper, np.inf)
        visible = len(self.memory_ids) if shown is None else int(np.count_nonzero(shown))
        if limit > 0 and visible:
            # k memories are at most `cut` away, so the nearest k (and any tie at the k-th) are too, and
            # each one's best row has a lower bound within `cut`: only those rows are scored in float32.
            k = min(limit, visible)
            cut = float(np.partition(upper, k - 1)[k - 1])
            memories, distances = self._rows_within(np.flatnonzero(lower <= cut), q)
            if shown is not None:
                seen = shown[memories]
                memories, distances = memories[seen], distances[seen]
            # A memory whose scored rows are all past `cut` may have a nearer row that was not scored: it
            # is not among the nearest, and its score (if a hit needs it) is computed on demand.
            exact = distances <= cut
            memories, distances = memories[exact], distances[exact]
            best[memories] = distances
            order = memories.tolist()
            ranked = [
                Ranked(self.memory_ids[order[i]], distance, speaker=self.speakers[order[i]])
                for i, distance in nearest(distances, [self.memory_ids[m] for m in order], limit)
            ]
        return ranked, Similarities(self._index, best, lambda i: self._exact(i, q))

    def _distance_bounds(self, queries: Matrix) -> npt.NDArray[np.float32]:
        """[queries, rows + memories]: for each query, a lower bound on each row's cosine distance, then an
        upper bound on each memory's best row's."""
        approx, bound = self._int8.similarities(queries)
        out = np.empty((len(queries), self.rows + len(self.memory_ids)), dtype=np.float32)
        lower, upper = out[:, : self.rows], out[:, self.rows :]
        np.subtract(1.0, approx, out=approx)  # distances
        np.subtract(approx, bound, out=lower)
        if len(self.starts) == self.rows:
            np.add(approx, bound, out=upper)
        else:
            approx += bound
            np.minimum.reduceat(approx, self.starts, axis=1, out=upper)
        return out

    def _rows_within(
        self, rows: npt.NDArray[np.intp], q: npt.NDArray[np.float32]
    ) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.float32]]:
        """The memories owning `rows` (ascending) and each one's best float32 distance among those rows."""
        if len(rows) == 0:
            return np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.float32)
        distances = (1.0 - self.matrix[rows] @ q).astype(np.float32, copy=False)
        owners = self._row_memory[rows]
        firsts = np.flatnonzero(np.concatenate(([True], owners[1:] != owners[:-1])))
        return owners[firsts], np.minimum.reduceat(distances, firsts)

    def _exact(self, memory: int, q: npt.NDArray[np.float32]) -> float:
        """The float32 best distance of one memory, from all its rows (a score the ranking did not need)."""
        return float(self._rows_within(np.arange(self.starts[memory], self._ends[memory]), q)[1][0])

    def _partition(self, project_id: uuid.UUID | None) -> npt.NDArray[np.bool_] | None:
        """Which memories a recall in `project_id` sees; None: all (the subject has no projects)."""
        if not self.projects:
            return None
        partition = self.global_partition.copy()
        if project_id is not None and project_id in self.projects:
            partition[self.projects[project_id]] = True
        return partition

    def _ranked(
        self, best: npt.NDArray[np.float32], project_id: uuid.UUID | None, limit: int
    ) -> list[Ranked]:
        partition = self._partition(project_id)
        if partition is not None:
            best = np.where(partition, best, np.inf)
        return [
            Ranked(self.memory_ids[i], distance, speaker=self.speakers[i])
            for i, distance in nearest(best, self.memory_ids, limit)
        ]


class SubjectVectorCopies(VersionedCopies[tuple[str, str], SubjectVectors]):
    """Per-replica copies of large subjects' vectors keyed by (tenant, subject), least recently used out
    past `max_rows` vectors in all."""
