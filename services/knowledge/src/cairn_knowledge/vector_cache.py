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

import uuid
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from cairn_storage.vector_copy import Matrix, VersionedCopies, group_distances, grouped, nearest, unit_rows


@dataclass(frozen=True)
class VectorRow:
    """One published vector of a tenant: an article's chunk 0 or one of its further chunks."""

    article_id: uuid.UUID
    tenant_visible: bool
    owner_subject_id: str | None
    project_id: uuid.UUID | None
    vector: bytes  # pgvector's binary form (vector_send): int16 dim, int16 unused, dim big-endian float4


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
        ordered, ids, starts, heads = grouped(rows, lambda r: r.article_id)
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
            matrix=unit_rows([r.vector for r in ordered], dim),
            starts=np.asarray(starts, dtype=np.intp),
            tenant_visible=np.asarray([h.tenant_visible for h in heads], dtype=np.bool_),
            owned={k: np.asarray(v, dtype=np.intp) for k, v in owned.items()},
            global_partition=np.asarray([h.project_id is None for h in heads], dtype=np.bool_),
            projects={k: np.asarray(v, dtype=np.intp) for k, v in projects.items()},
        )

    @property
    def rows(self) -> int:
        return int(self.matrix.shape[0])

    def nearest(
        self, subject_id: str, project_id: uuid.UUID | None, query: Sequence[float], limit: int
    ) -> list[tuple[uuid.UUID, float]]:
        """The `limit` visible articles nearest to `query` by their best vector's cosine distance, ties by
        id: the order of the SQL exact statement."""
        if not self.article_ids or limit <= 0:
            return []
        best = group_distances(self.matrix, self.starts, query)
        visible = self.tenant_visible.copy()
        if subject_id in self.owned:
            visible[self.owned[subject_id]] = True
        partition = self.global_partition.copy()
        if project_id is not None and project_id in self.projects:
            partition[self.projects[project_id]] = True
        best = np.where(visible & partition, best, np.inf)
        return [(self.article_ids[i], distance) for i, distance in nearest(best, self.article_ids, limit)]


class ArticleVectorCache(VersionedCopies[str, TenantVectors]):
    """Per-replica copies of small tenants' vectors, least recently used out past `max_rows` in all."""
