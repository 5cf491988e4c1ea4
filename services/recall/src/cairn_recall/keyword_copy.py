"""Okapi BM25 for large subjects from this replica's copy of their postings.

On 10,000 conversation turns the keyword side's statement took ~15 ms of PostgreSQL per recall (about 650
candidates' long tsvectors detoasted and filtered), plus term statistics for words not counted lately: the
largest share of a recall once the semantic side moved to a vector copy (docs/performance.md). Scored from
a copy, the same side is a few numpy additions over the query terms' posting lists.

The copy is built from PostgreSQL's own tsvectors (`to_tsvector('english', text)`, the stored `tsv`), so
its terms, term frequencies and lengths are the SQL statement's, and it is exact: every live row holding a
query term is scored, where the SQL path of a large subject matches only its rarest terms. Document
frequencies, the row count and the mean length are the subject's live rows', as the SQL path's cached
statistics are.

Like the vector copy it is never a source of truth: the subject's keyword version (`memory_versions.version`
plus `memory_live_counts.changes`, migrations 0018 and 0019) moves on every insert, delete, supersede,
text or partition change, and recall uses a copy only when it was loaded at that version or later.
"""

import math
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from cairn_recall.ranking import Ranked, speaker_of
from cairn_storage.vector_copy import VersionedCopies


def _ranks(ids: Sequence[uuid.UUID]) -> npt.NDArray[np.intp]:
    """Each id's place in ascending order (rows come in id order, so sorting them is one pass)."""
    ranks = np.empty(len(ids), dtype=np.intp)
    ranks[sorted(range(len(ids)), key=ids.__getitem__)] = np.arange(len(ids), dtype=np.intp)
    return ranks


@dataclass(frozen=True)
class KeywordDoc:
    """One live memory of the subject: what the keyword side filters on and reports."""

    memory_id: uuid.UUID
    project_id: uuid.UUID | None
    head: str  # what `speaker_of` reads
    role: str | None


@dataclass(frozen=True)
class TermPostings:
    """The rows (indexes into the docs, ascending) holding one lexeme, and how often each holds it."""

    lexeme: str
    docs: Sequence[int]
    frequencies: Sequence[int]


@dataclass
class SubjectPostings:
    """A subject's live rows and an inverted index of their lexemes, at one version."""

    version: int
    memory_ids: list[uuid.UUID]
    speakers: list[str | None]
    lengths: npt.NDArray[np.float64]  # distinct lexemes per row (`length(tsv)`), BM25's document length
    offsets: dict[str, tuple[int, int]]  # lexeme -> its slice of `docs` / `frequencies`
    docs: npt.NDArray[np.int32]
    frequencies: npt.NDArray[np.float32]
    global_partition: npt.NDArray[np.bool_]  # project_id IS NULL
    projects: dict[uuid.UUID, npt.NDArray[np.intp]]
    id_ranks: npt.NDArray[np.intp]  # each row's place in id order (its ties' order)
    _norms: dict[tuple[float, float], npt.NDArray[np.float64]] = field(default_factory=dict, repr=False)

    @classmethod
    def build(
        cls, version: int, rows: Sequence[KeywordDoc], terms: Iterable[TermPostings]
    ) -> "SubjectPostings":
        """`rows` in the order the postings' doc indexes refer to."""
        offsets: dict[str, tuple[int, int]] = {}
        doc_parts: list[Sequence[int]] = []
        tf_parts: list[Sequence[int]] = []
        start = 0
        for term in terms:
            offsets[term.lexeme] = (start, start + len(term.docs))
            start += len(term.docs)
            doc_parts.append(term.docs)
            tf_parts.append(term.frequencies)
        projects: dict[uuid.UUID, list[int]] = {}
        for i, row in enumerate(rows):
            if row.project_id is not None:
                projects.setdefault(row.project_id, []).append(i)
        docs = np.fromiter((d for part in doc_parts for d in part), dtype=np.int32, count=start)
        memory_ids = [r.memory_id for r in rows]
        return cls(
            version=version,
            memory_ids=memory_ids,
            speakers=[speaker_of(r.head, r.role) for r in rows],
            # A row's postings are its distinct lexemes: `length(tsv)`, without reading the tsvector again.
            lengths=np.bincount(docs, minlength=len(rows)).astype(np.float64),
            offsets=offsets,
            docs=docs,
            frequencies=np.fromiter((f for part in tf_parts for f in part), dtype=np.float32, count=start),
            global_partition=np.asarray([r.project_id is None for r in rows], dtype=np.bool_),
            projects={k: np.asarray(v, dtype=np.intp) for k, v in projects.items()},
            id_ranks=_ranks(memory_ids),
        )

    def _norm(self, k1: float, b: float) -> npt.NDArray[np.float64]:
        """BM25's per-row length normalisation, k1 * (1 - b + b * dl / avgdl): the same for every query."""
        key = (k1, b)
        if key not in self._norms:
            avgdl = max(float(self.lengths.mean()), 1e-9) if len(self.lengths) else 1.0
            self._norms[key] = k1 * (1 - b + b * self.lengths / avgdl)
        return self._norms[key]

    @property
    def rows(self) -> int:
        """Postings held: what the replica's budget counts (8 bytes each)."""
        return int(self.docs.shape[0])

    def document_frequency(self, lexeme: str) -> int:
        start, end = self.offsets.get(lexeme, (0, 0))
        return end - start

    def ranked(
        self, lexemes: Sequence[str], project_id: uuid.UUID | None, limit: int, k1: float, b: float
    ) -> list[Ranked]:
        """The `limit` rows of the partition (global, plus `project_id`'s) holding any of `lexemes`, best
        BM25 first, ties by id, each with its share of the query's idf mass: what the SQL keyword
        statement returns when it scores every candidate."""
        n_docs = len(self.memory_ids)
        if not lexemes or n_docs == 0 or limit <= 0:
            return []
        norm = self._norm(k1, b)
        # Only the query terms' postings are touched: their rows are the candidates, and each row's score
        # and idf coverage are sums over the postings that name it.
        doc_parts: list[npt.NDArray[np.int32]] = []
        score_parts: list[npt.NDArray[np.float64]] = []
        idf_parts: list[npt.NDArray[np.float64]] = []
        idf_mass = 0.0
        for lexeme in dict.fromkeys(lexemes):
            start, end = self.offsets.get(lexeme, (0, 0))
            idf = math.log(1 + (n_docs - (end - start) + 0.5) / ((end - start) + 0.5))
            idf_mass += idf
            if end == start:
                continue
            docs = self.docs[start:end]
            tf = self.frequencies[start:end].astype(np.float64)
            doc_parts.append(docs)
            score_parts.append(idf * tf * (k1 + 1) / (tf + norm[docs]))
            idf_parts.append(np.full(end - start, idf))
        if not doc_parts:
            return []
        # Sums over all rows (bincount is linear; sorting the postings to find their rows was ~4x slower),
        # then the rows that hold a term: every idf is > 0, so exactly those have coverage.
        all_docs = np.concatenate(doc_parts)
        covered_all = np.bincount(all_docs, weights=np.concatenate(idf_parts), minlength=n_docs)
        rows = np.flatnonzero(covered_all)
        row_covered = covered_all[rows]
        row_scores = np.bincount(all_docs, weights=np.concatenate(score_parts), minlength=n_docs)[rows]
        if self.projects:  # rows of projects other than the asked one are outside the partition
            allowed = self.global_partition[rows]
            if project_id is not None and project_id in self.projects:
                allowed |= np.isin(rows, self.projects[project_id])
            rows, row_scores, row_covered = rows[allowed], row_scores[allowed], row_covered[allowed]
        candidates = np.arange(len(rows))
        if len(candidates) > limit:
            # Every row as good as the limit-th is kept before the id tie-break, so ties at the cut are exact.
            kth = np.partition(-row_scores, limit - 1)[limit - 1]
            candidates = candidates[-row_scores <= kth]
        # Best score first, ties by id (a row's place in id order: no Python comparison of UUIDs).
        order = candidates[np.lexsort((self.id_ranks[rows[candidates]], -row_scores[candidates]))][:limit]
        mass = max(idf_mass, 1e-9)
        return [
            Ranked(self.memory_ids[row], score, covered / mass, self.speakers[row])
            for row, score, covered in zip(
                rows[order].tolist(), row_scores[order].tolist(), row_covered[order].tolist(), strict=True
            )
        ]


class SubjectPostingsCopies(VersionedCopies[tuple[str, str], SubjectPostings]):
    """Per-replica copies of large subjects' postings keyed by (tenant, subject), least recently used out
    past `max_rows` postings in all."""
