"""Every recall query. Scoped tables are reached only through `cairn_scope`'s guard."""

import re
import uuid
from typing import Any

from sqlalchemy import ColumnElement, case, func, literal, or_, select, text
from sqlalchemy.ext.asyncio import AsyncSession

from cairn_recall.ranking import Ranked, speaker_of
from cairn_scope import Scope, check_scoped
from cairn_storage.models import Memory, MemoryChunk

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


def _best_per_memory(rows: Any, limit: int) -> list[Ranked]:
    """Head and chunk distances of the same memories: each memory by its best, nearest first."""
    best: dict[uuid.UUID, float] = {}
    for row in rows:
        if row.id not in best or row.distance < best[row.id]:
            best[row.id] = row.distance
    ordered = sorted(best.items(), key=lambda item: (item[1], item[0]))
    return [Ranked(memory_id, distance) for memory_id, distance in ordered[:limit]]


def _escape_like(value: str) -> str:
    return value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


class RecallStore:
    def __init__(self, session: AsyncSession) -> None:
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
        """Transaction-local options for `ann()` (pooled connections never keep them), in one round trip.

        Sorting is taken away for the rest of the transaction: with the subject predicate inside, the
        planner may prefer the (tenant, subject) btree plus a top-N sort over every row of the subject
        (exact, but it reads all of them: 30 ms at 4,000 rows, linear beyond), which leaves the
        HNSW-ordered scan. `constants` also plans with bound values as constants (`plan_with_constants`)."""
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
        calls = ", ".join(f"set_config(:n{i}, :v{i}, true)" for i in range(len(options)))
        params: dict[str, str] = {}
        for i, (name, value) in enumerate(options.items()):
            params |= {f"n{i}": name, f"v{i}": value}
        await self.session.execute(text(f"SELECT {calls}"), params)

    async def plan_with_constants(self) -> None:
        """Plan this transaction's statements with their bound values as constants (custom plans), so a
        partial index whose predicate names a tenant and subject can serve them (see subject_index)."""
        await self.session.execute(text("SELECT set_config('plan_cache_mode', 'force_custom_plan', true)"))

    async def live_rows_at_most(self, scope: Scope, cap: int) -> int:
        """The subject's embedded live rows, counted only up to `cap + 1` (the count is a planning hint)."""
        inner = check_scoped(
            select(literal(1))
            .where(*_subject_rows(scope, False), Memory.embedding.is_not(None))
            .limit(cap + 1),
            scope,
        )
        return int(await self.session.scalar(select(func.count()).select_from(inner.subquery())) or 0)

    def ann_statement(
        self, scope: Scope, vector: list[float], limit: int, pool: int, project_id: str | None
    ) -> Any:
        """Large subjects: the subject and partition predicates ride inside the HNSW scan, which pgvector's
        iterative scan keeps walking until `pool` of the subject's own rows have passed them (a pool
        filtered only afterwards starved a subject whose tenant was crowded by near-copies). The outer
        query re-applies the subject bound, so the guard sees it on the outermost query."""
        distance = Memory.embedding.cosine_distance(vector)
        inner = (
            select(Memory.id, Memory.subject_id, distance.label("distance"))
            .where(
                Memory.tenant_id == scope.tenant_id,
                Memory.subject_id == scope.subject_id,
                Memory.embedding.is_not(None),
                Memory.superseded_by.is_(None),
                _partition(Memory.project_id, project_id),
            )
            .order_by(distance)
            .limit(pool)
            .subquery("pool")
        )
        outer = (
            select(inner.c.id, inner.c.distance)
            .where(inner.c.subject_id == scope.subject_id)
            .order_by(inner.c.distance)
            .limit(limit)
        )
        return check_scoped(outer, scope)

    def ann_chunks_statement(
        self, scope: Scope, vector: list[float], limit: int, pool: int, project_id: str | None
    ) -> Any:
        """The same index-served scan over chunk vectors 1.., best chunk per live memory."""
        distance = MemoryChunk.embedding.cosine_distance(vector)
        inner = (
            select(MemoryChunk.memory_id, MemoryChunk.subject_id, distance.label("distance"))
            .where(MemoryChunk.tenant_id == scope.tenant_id, MemoryChunk.subject_id == scope.subject_id)
            .order_by(distance)
            .limit(pool)
            .subquery("chunk_pool")
        )
        best = func.min(inner.c.distance)
        outer = (
            select(inner.c.memory_id.label("id"), best.label("distance"))
            .join(Memory, Memory.id == inner.c.memory_id)
            .where(
                inner.c.subject_id == scope.subject_id,
                *_subject_rows(scope, False),
                _partition(Memory.project_id, project_id),
            )
            .group_by(inner.c.memory_id)
            .order_by(best)
            .limit(limit)
        )
        return check_scoped(outer, scope)

    async def ann(
        self, scope: Scope, vector: list[float], limit: int, pool: int, project_id: str | None
    ) -> list[Ranked]:
        """Heads and chunks through the HNSW indexes; call `set_ann_options` first in this transaction."""
        heads = (await self.session.execute(self.ann_statement(scope, vector, limit, pool, project_id))).all()
        chunks = (
            await self.session.execute(self.ann_chunks_statement(scope, vector, limit, pool, project_id))
        ).all()
        return _best_per_memory([*heads, *chunks], limit)

    async def exact(
        self, scope: Scope, vector: list[float], limit: int, project_id: str | None, include_superseded: bool
    ) -> list[Ranked]:
        """Exact bounded top-k over the subject's own rows (no index scan), scored by the best chunk."""
        distance = Memory.embedding.cosine_distance(vector)
        heads = check_scoped(
            select(Memory.id, distance.label("distance"))
            .where(
                *_subject_rows(scope, include_superseded),
                Memory.embedding.is_not(None),
                _partition(Memory.project_id, project_id),
            )
            .order_by(distance)
            .limit(limit),
            scope,
        )
        best = func.min(MemoryChunk.embedding.cosine_distance(vector))
        chunks = check_scoped(
            select(MemoryChunk.memory_id.label("id"), best.label("distance"))
            .join(Memory, Memory.id == MemoryChunk.memory_id)
            .where(
                MemoryChunk.tenant_id == scope.tenant_id,
                MemoryChunk.subject_id == scope.subject_id,
                *_subject_rows(scope, include_superseded),
                _partition(Memory.project_id, project_id),
            )
            .group_by(MemoryChunk.memory_id)
            .order_by(best)
            .limit(limit),
            scope,
        )
        rows = [*await self.session.execute(heads), *await self.session.execute(chunks)]
        return _best_per_memory(rows, limit)

    async def query_lexemes(self, query: str, *, constants: bool = False) -> list[str]:
        """The query's terms as the full-text index stores them (stemmed, stop words removed); `constants`
        also sets `plan_with_constants` for the transaction in the same round trip."""
        lexemes: Any = func.tsvector_to_array(func.to_tsvector("english", query))
        if not constants:
            return list(await self.session.scalar(select(lexemes)) or [])
        plan = func.set_config("plan_cache_mode", "force_custom_plan", True)
        row = (await self.session.execute(select(lexemes, plan))).one()
        return list(row[0] or [])

    async def speakers(self, scope: Scope, ids: list[uuid.UUID]) -> dict[uuid.UUID, str | None]:
        """Who said each memory, for memories that are conversation turns (see `ranking.speaker_of`)."""
        stmt = check_scoped(
            select(
                Memory.id,
                func.left(Memory.text, 80).label("head"),
                Memory.metadata_["role"].astext.label("role"),
            ).where(
                Memory.tenant_id == scope.tenant_id, Memory.subject_id == scope.subject_id, Memory.id.in_(ids)
            ),
            scope,
        )
        return {r.id: speaker_of(r.head, r.role) for r in await self.session.execute(stmt)}

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

    async def rows_with_scores(
        self, scope: Scope, ids: list[uuid.UUID], vector: list[float] | None
    ) -> dict[uuid.UUID, tuple[Memory, float | None]]:
        """The memories for `ids` with their cosine similarity to the query (None without a vector)."""
        if not ids:
            return {}
        score: Any = (1 - Memory.embedding.cosine_distance(vector)) if vector is not None else literal(None)
        stmt = check_scoped(
            select(Memory, score.label("score")).where(
                Memory.tenant_id == scope.tenant_id, Memory.subject_id == scope.subject_id, Memory.id.in_(ids)
            ),
            scope,
        )
        rows = {
            r.Memory.id: (r.Memory, None if r.score is None else float(r.score))
            for r in await self.session.execute(stmt)
        }
        if vector is None:
            return rows
        # A long memory scores by its best chunk, as it was ranked.
        best = func.max(1 - MemoryChunk.embedding.cosine_distance(vector))
        chunks = check_scoped(
            select(MemoryChunk.memory_id, best.label("score"))
            .where(
                MemoryChunk.tenant_id == scope.tenant_id,
                MemoryChunk.subject_id == scope.subject_id,
                MemoryChunk.memory_id.in_(ids),
            )
            .group_by(MemoryChunk.memory_id),
            scope,
        )
        for r in await self.session.execute(chunks):
            memory, head = rows.get(r.memory_id, (None, None))
            if memory is not None and (head is None or r.score > head):
                rows[r.memory_id] = (memory, float(r.score))
        return rows
