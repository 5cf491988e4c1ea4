"""Every recall query. Scoped tables are reached only through `cairn_scope`'s guard."""

import re
import uuid
from typing import Any, NamedTuple

from sqlalchemy import ColumnElement, TextClause, case, literal, or_, select, text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from cairn_recall.keyword_copy import KeywordDoc, TermPostings
from cairn_recall.ranking import Ranked, speaker_of
from cairn_recall.sql import PARTITION, SUBJECT, SUBJECT_LIVE, scope_params
from cairn_recall.sql import project_param as _project
from cairn_recall.vector_copy import SubjectVectorRow
from cairn_scope import Scope, check_scoped
from cairn_storage.models import Memory
from cairn_storage.scoped_pool import ScopedReads
from cairn_storage.vector_search import vector_literal

_TOKEN = re.compile(r"[\w-]{3,}", re.UNICODE)
MAX_FALLBACK_TOKENS = 8


def _partition(column: Any, project_id: str | None) -> ColumnElement[bool]:
    """Global memories, plus the given project's (a foreign or unknown project is just an empty partition)."""
    if project_id:
        return or_(column.is_(None), column == uuid.UUID(project_id))
    return column.is_(None)  # type: ignore[no-any-return]


def _subject_rows(scope: Scope, include_superseded: bool) -> list[ColumnElement[bool]]:
    conditions = [Memory.tenant_id == scope.tenant_id, Memory.subject_id == scope.subject_id]
    if not include_superseded:
        conditions.append(Memory.superseded_by.is_(None))
    return conditions


# What `ranking.speaker_of` reads, returned with each candidate so the speaker prior needs no query of its own.
_SPEAKER = "left(m.text, 80) AS head, m.metadata ->> 'role' AS role"
_SPEAKER_OF_GROUP = "min(left(m.text, 80)) AS head, min(m.metadata ->> 'role') AS role"

# The subject's live memories, embedded or not: migration 0013's trigger-kept count (one row; counting the
# subject's embedded rows up to the cap read every one of them, 5 ms at 2,000 rows).
_LIVE_ROWS = text(
    "SELECT coalesce((SELECT c.live FROM memory_live_counts c"
    " WHERE c.tenant_id = :tenant_id AND c.subject_id = :subject_id), 0)"
)

# Large subjects: the subject and partition predicates ride inside each HNSW scan, which pgvector's
# iterative scan keeps walking until `pool` of the subject's own rows have passed them (a pool filtered
# only afterwards starved a subject whose tenant was crowded by near-copies). Heads and chunk vectors 1..
# (best chunk per live memory) in one round trip; each outer query re-applies the subject bound.
_ANN = text(
    f"""
(SELECT pool.id, pool.distance, pool.head, pool.role FROM (
    SELECT m.id, m.subject_id, m.embedding <=> CAST(:vector AS vector) AS distance, {_SPEAKER} FROM memories m
    WHERE {SUBJECT_LIVE} AND m.embedding IS NOT NULL AND {PARTITION}
    ORDER BY distance LIMIT :pool
 ) AS pool
 WHERE pool.subject_id = :subject_id ORDER BY pool.distance LIMIT :limit)
UNION ALL
(SELECT chunk_pool.memory_id AS id, min(chunk_pool.distance) AS distance, {_SPEAKER_OF_GROUP} FROM (
    SELECT c.memory_id, c.subject_id, c.embedding <=> CAST(:vector AS vector) AS distance FROM memory_chunks c
    WHERE c.tenant_id = :tenant_id AND c.subject_id = :subject_id
    ORDER BY distance LIMIT :pool
 ) AS chunk_pool
 JOIN memories m ON m.id = chunk_pool.memory_id
 WHERE chunk_pool.subject_id = :subject_id AND {SUBJECT_LIVE} AND {PARTITION}
 GROUP BY chunk_pool.memory_id ORDER BY min(chunk_pool.distance) LIMIT :limit)
"""
)

# Small subjects: exact bounded top-k over the subject's own rows, heads and best chunks. `OFFSET 0` fences
# the heads' scan: without it the planner may serve `ORDER BY distance LIMIT` from the tenant-wide HNSW
# index, which keeps only its nearest `ef_search` rows of every subject and filters afterwards (a 1,500-row
# subject in a crowded table got no heads at all: tests/integration/test_recall_exact.py). Chunks are
# reduced to each memory's best distance before the join (not sorted with their vectors), and the speaker
# columns are read for the top rows only (`left(m.text, 80)` detoasts the whole text).
_WHICH_ROWS = "(CAST(:include_superseded AS boolean) OR m.superseded_by IS NULL)"
_EXACT = text(
    f"""
(SELECT top.id, top.distance, {_SPEAKER} FROM (
    SELECT own.id, own.distance FROM (
        SELECT m.id, m.embedding <=> CAST(:vector AS vector) AS distance FROM memories m
        WHERE {SUBJECT} AND {_WHICH_ROWS} AND m.embedding IS NOT NULL AND {PARTITION}
        OFFSET 0
    ) AS own ORDER BY own.distance LIMIT :limit
 ) AS top JOIN memories m ON m.id = top.id WHERE {SUBJECT})
UNION ALL
(SELECT best.id, best.distance, {_SPEAKER} FROM (
    SELECT per.id, per.distance FROM (
        SELECT c.memory_id AS id, min(c.embedding <=> CAST(:vector AS vector)) AS distance
        FROM memory_chunks c WHERE c.tenant_id = :tenant_id AND c.subject_id = :subject_id
        GROUP BY c.memory_id
    ) AS per JOIN memories m ON m.id = per.id
    WHERE {SUBJECT} AND {_WHICH_ROWS} AND {PARTITION}
    ORDER BY per.distance LIMIT :limit
 ) AS best JOIN memories m ON m.id = best.id WHERE {SUBJECT})
"""
)

# The columns `memory_out` reads.
_MEMORY_COLUMNS = """m.id, m.text, m.source, m.confidence, m.tags, m.metadata AS metadata_, m.project_id,
       m.source_session_id, m.superseded_by, m.embedding_content_hash,
       coalesce(r.recall_count, 0) AS recall_count, r.last_recalled_at, m.created_at, m.subject_id"""
# The ids are looked up alone, behind an `OFFSET 0` fence, and the subject is checked on the rows found. Without
# the fence, once the table holds more than one subject, the generic plan a prepared statement settles on after
# five runs estimates the subject at a few hundred rows and ANDs the scope index into the id lookup: it read
# every index entry of a 10,000-row subject on each recall (0.43-0.76 ms against 0.15; docs/performance.md).
# Recall counters live beside the memory (migration 0020); a memory never recalled has no row there.
_ROWS_BY_ID = f"""FROM (SELECT * FROM memories WHERE id = ANY(CAST(:ids AS uuid[])) OFFSET 0) m
LEFT JOIN memory_recalls r ON r.memory_id = m.id WHERE {SUBJECT}"""

# Those columns and the query similarity of the head or, when better, the best chunk.
_ROWS_WITH_SCORES = text(
    f"""
SELECT {_MEMORY_COLUMNS},
       greatest(
           1 - (m.embedding <=> CAST(:vector AS vector)),
           (SELECT max(1 - (c.embedding <=> CAST(:vector AS vector))) FROM memory_chunks c
            WHERE c.tenant_id = :tenant_id AND c.subject_id = :subject_id AND c.memory_id = m.id)
       ) AS score
{_ROWS_BY_ID}
"""
)
# Without scores: a large subject's copy of its vectors has them already.
_ROWS = text(f"SELECT {_MEMORY_COLUMNS} {_ROWS_BY_ID}")


# The subject's vector version (migration 0018): 0 until its first vector write.
_VECTOR_VERSION = "coalesce((SELECT v.version FROM memory_versions v WHERE v.tenant_id = :tenant_id AND v.subject_id = :subject_id), 0)"
_VERSION = text(f"SELECT {_VECTOR_VERSION}")

# Every live vector of the subject (heads and chunks) with what the semantic side filters and ranks on, in
# pgvector's binary form (bytes the driver hands over as they are): cairn_recall.vector_copy.
_SUBJECT_VECTORS = text(
    f"""
SELECT m.id AS memory_id, m.project_id, left(m.text, 80) AS head, m.metadata ->> 'role' AS role,
       vector_send(m.embedding) AS vector
FROM memories m WHERE {SUBJECT_LIVE} AND m.embedding IS NOT NULL
UNION ALL
SELECT c.memory_id, m.project_id, left(m.text, 80), m.metadata ->> 'role', vector_send(c.embedding)
FROM memory_chunks c JOIN memories m ON m.id = c.memory_id
WHERE c.tenant_id = :tenant_id AND c.subject_id = :subject_id AND {SUBJECT_LIVE}
"""
)


# What a large subject's recall reads before either side: the query's lexemes (PostgreSQL's own parser, as
# the stored tsv), the subject's vector version and its keyword version (migration 0019), in one round trip.
_KEYWORD_VERSION = (
    f"{_VECTOR_VERSION} + coalesce((SELECT c.changes FROM memory_live_counts c"
    " WHERE c.tenant_id = :tenant_id AND c.subject_id = :subject_id), 0)"
)
_LARGE_SUBJECT_STATE = text(
    "SELECT tsvector_to_array(to_tsvector('english', CAST(:query AS text))) AS lexemes,"
    f" {_VECTOR_VERSION} AS vectors, {_KEYWORD_VERSION} AS words"
)

_KEYWORD_VERSION_ONLY = text(f"SELECT {_KEYWORD_VERSION}")

# The subject's live rows in id order, and its postings with doc = the row's place in that order (the two
# read in one snapshot): cairn_recall.keyword_copy. Only the postings read the tsvectors (each row's length
# is its count of postings).
_SUBJECT_DOCS = text(
    f"SELECT m.id, m.project_id, left(m.text, 80) AS head, m.metadata ->> 'role' AS role"
    f" FROM memories m WHERE {SUBJECT_LIVE} ORDER BY m.id"
)
_SUBJECT_POSTINGS = text(
    f"""
WITH docs AS MATERIALIZED (
    SELECT row_number() OVER (ORDER BY m.id) - 1 AS doc, m.tsv FROM memories m WHERE {SUBJECT_LIVE}
)
SELECT p.lexeme, array_agg(d.doc ORDER BY d.doc) AS docs,
       array_agg(coalesce(array_length(p.positions, 1), 1) ORDER BY d.doc) AS frequencies
FROM docs d CROSS JOIN LATERAL unnest(d.tsv) AS p(lexeme, positions, weights)
GROUP BY p.lexeme
"""
)

_SUBJECT_VECTORS_AT_MOST = text(
    f"""
SELECT count(*) FROM (
    (SELECT 1 FROM memories m WHERE {SUBJECT_LIVE} AND m.embedding IS NOT NULL LIMIT :cap)
    UNION ALL
    (SELECT 1 FROM memory_chunks c JOIN memories m ON m.id = c.memory_id
     WHERE c.tenant_id = :tenant_id AND c.subject_id = :subject_id AND {SUBJECT_LIVE} LIMIT :cap)
) AS counted
"""
)


def ann_options(
    ef_search: int,
    iterative_scan: str | None,
    max_scan_tuples: int | None = None,
    scan_mem_multiplier: float | None = None,
    *,
    constants: bool = False,
) -> dict[str, str]:
    """The planner and pgvector settings an `ann()` read runs with: transaction-local (`set_ann_options`),
    or the connection settings of a pool that serves nothing else (`RecallService`'s subject ANN pool).

    Sorting is taken away: with the subject predicate inside, the planner may prefer the (tenant, subject)
    btree plus a top-N sort over every row of the subject (exact, but it reads all of them: 30 ms at 4,000
    rows, linear beyond), which leaves the HNSW-ordered scan. `constants` plans with bound values as
    constants (custom plans), so a partial index whose predicate names a tenant and subject can serve it."""
    options: dict[str, str] = {"enable_sort": "off", "hnsw.ef_search": str(ef_search)}
    if constants:
        options["plan_cache_mode"] = "force_custom_plan"
    if iterative_scan:
        options["hnsw.iterative_scan"] = iterative_scan
        # An iterative scan also stops when its visited set outgrows work_mem x this multiplier.
        if max_scan_tuples:
            options["hnsw.max_scan_tuples"] = str(max_scan_tuples)
        if scan_mem_multiplier:
            options["hnsw.scan_mem_multiplier"] = str(scan_mem_multiplier)
    return options


class LargeSubjectState(NamedTuple):
    lexemes: list[str]
    vector_version: int
    keyword_version: int


def _best_per_memory(rows: Any, limit: int) -> list[Ranked]:
    """Head and chunk distances of the same memories: each memory by its best, nearest first."""
    best: dict[uuid.UUID, Ranked] = {}
    for row in rows:
        if row.id not in best or row.distance < best[row.id].value:
            best[row.id] = Ranked(row.id, row.distance, speaker=speaker_of(row.head, row.role))
    return sorted(best.values(), key=lambda r: (r.value, r.id))[:limit]


def _escape_like(value: str) -> str:
    return value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


class RecallStore:
    def __init__(self, session: AsyncSession | AsyncConnection) -> None:
        """`session`: an ORM session, or a Core connection for the hot reads (no session bookkeeping)."""
        self.session = session

    async def set_ann_options(
        self,
        ef_search: int,
        iterative_scan: str | None,
        max_scan_tuples: int | None = None,
        scan_mem_multiplier: float | None = None,
        *,
        constants: bool = False,
    ) -> None:
        """Transaction-local `ann_options` for `ann()` (pooled connections never keep them), in one round
        trip."""
        options = ann_options(
            ef_search, iterative_scan, max_scan_tuples, scan_mem_multiplier, constants=constants
        )
        calls = ", ".join(f"set_config(:n{i}, :v{i}, true)" for i in range(len(options)))
        params: dict[str, str] = {}
        for i, (name, value) in enumerate(options.items()):
            params |= {f"n{i}": name, f"v{i}": value}
        await self.session.execute(text(f"SELECT {calls}"), params)

    async def plan_with_constants(self) -> None:
        """Plan this transaction's statements with their bound values as constants (custom plans), so a
        partial index whose predicate names a tenant and subject can serve them (see subject_index)."""
        await self.session.execute(text("SELECT set_config('plan_cache_mode', 'force_custom_plan', true)"))

    def ann_statement(
        self, scope: Scope, vector: list[float], limit: int, pool: int, project_id: str | None
    ) -> TextClause:
        """Large subjects: heads and chunks through the HNSW indexes in one statement (see `_ANN`)."""
        params = {**scope_params(scope), "vector": vector_literal(vector), "limit": limit, "pool": pool}
        return _ANN.bindparams(**params, project_id=_project(project_id))

    async def ann(
        self, scope: Scope, vector: list[float], limit: int, pool: int, project_id: str | None
    ) -> list[Ranked]:
        """Heads and chunks through the HNSW indexes; call `set_ann_options` first in this transaction."""
        rows = await self.session.execute(self.ann_statement(scope, vector, limit, pool, project_id))
        return _best_per_memory(rows, limit)

    async def vector_version(self, scope: Scope) -> int:
        return int(await self.session.scalar(_VERSION, scope_params(scope)) or 0)

    async def keyword_version(self, scope: Scope) -> int:
        return int(await self.session.scalar(_KEYWORD_VERSION_ONLY, scope_params(scope)) or 0)

    async def subject_postings(self, scope: Scope) -> tuple[list[KeywordDoc], list[TermPostings]]:
        """The subject's live rows and postings; read in the same snapshot as `keyword_version`."""
        params = scope_params(scope)
        docs = [
            KeywordDoc(r.id, r.project_id, r.head, r.role)
            for r in await self.session.execute(_SUBJECT_DOCS, params)
        ]
        terms = [
            TermPostings(r.lexeme, r.docs, r.frequencies)
            for r in await self.session.execute(_SUBJECT_POSTINGS, params)
        ]
        return docs, terms

    async def subject_vectors_at_most(self, scope: Scope, cap: int) -> int:
        """The subject's live vectors (heads + chunks), each kind counted only up to `cap + 1`."""
        return int(
            await self.session.scalar(_SUBJECT_VECTORS_AT_MOST, {**scope_params(scope), "cap": cap + 1}) or 0
        )

    async def subject_vectors(self, scope: Scope) -> list[SubjectVectorRow]:
        """The subject's live vectors; read in the same snapshot as `vector_version` to pair them."""
        rows = await self.session.execute(_SUBJECT_VECTORS, scope_params(scope))
        return [SubjectVectorRow(r.memory_id, r.project_id, r.head, r.role, bytes(r.vector)) for r in rows]

    async def ilike_fallback(
        self, scope: Scope, query: str, limit: int, project_id: str | None
    ) -> list[Memory]:
        """Degraded path: rows containing the query's words, most words first, then most recent first."""
        tokens = list(dict.fromkeys(t.lower() for t in _TOKEN.findall(query)))[:MAX_FALLBACK_TOKENS] or [
            query.strip()
        ]
        matches = [Memory.text.ilike(f"%{_escape_like(t)}%", escape="\\") for t in tokens]
        matched = sum((case((m, 1), else_=0) for m in matches), start=literal(0))
        stmt = check_scoped(
            select(Memory)
            .where(*_subject_rows(scope, False), _partition(Memory.project_id, project_id), or_(*matches))
            .order_by(matched.desc(), Memory.created_at.desc())
            .limit(limit),
            scope,
        )
        return list((await self.session.execute(stmt)).scalars().all())


class HotReads:
    """The constant reads of every recall, on the plain asyncpg pool (`ScopedReads`: the same walk and
    row-level security as the engines, without their per-statement CPU): a large subject's state and
    chosen rows; a small subject's size, exact top-k and scored rows."""

    def __init__(self, reads: ScopedReads) -> None:
        self._reads = reads

    async def large_subject_state(self, scope: Scope, query: str) -> LargeSubjectState:
        """The query's lexemes and the subject's vector and keyword versions, in one round trip."""
        (row,) = await self._reads.fetch(_LARGE_SUBJECT_STATE, {**scope_params(scope), "query": query})
        return LargeSubjectState(list(row.lexemes or []), int(row.vectors), int(row.words))

    async def rows(self, scope: Scope, ids: list[uuid.UUID]) -> dict[uuid.UUID, Any]:
        """The memories for `ids` (those still there)."""
        if not ids:
            return {}
        return {r.id: r for r in await self._reads.fetch(_ROWS, {**scope_params(scope), "ids": ids})}

    async def live_rows(self, scope: Scope) -> int:
        """The subject's live memories, embedded or not (a planning hint: at least its embedded rows)."""
        return int((await self._reads.fetch(_LIVE_ROWS, scope_params(scope)))[0][0] or 0)

    async def exact(
        self, scope: Scope, vector: list[float], limit: int, project_id: str | None, include_superseded: bool
    ) -> list[Ranked]:
        """Exact bounded top-k over the subject's own rows (no index scan), scored by the best chunk."""
        params = {
            **scope_params(scope),
            "vector": vector_literal(vector),
            "limit": limit,
            "project_id": _project(project_id),
            "include_superseded": include_superseded,
        }
        return _best_per_memory(await self._reads.fetch(_EXACT, params), limit)

    async def rows_with_scores(
        self, scope: Scope, ids: list[uuid.UUID], vector: list[float] | None
    ) -> dict[uuid.UUID, tuple[Any, float | None]]:
        """The memories for `ids` with their cosine similarity to the query, a long memory by its best
        chunk as it was ranked (None without a vector)."""
        if not ids:
            return {}
        params = {
            **scope_params(scope),
            "ids": ids,
            "vector": vector_literal(vector) if vector is not None else None,
        }
        rows = await self._reads.fetch(_ROWS_WITH_SCORES, params)
        return {r.id: (r, None if r.score is None else float(r.score)) for r in rows}
