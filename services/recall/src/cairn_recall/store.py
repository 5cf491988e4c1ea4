"""Every recall query. Scoped tables are reached only through `cairn_scope`'s guard."""

import re
import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, Text, case, func, literal, or_, select, text
from sqlalchemy.ext.asyncio import AsyncSession

from cairn_scope import Scope, check_scoped
from cairn_storage.models import Memory

_TOKEN = re.compile(r"[\w-]{3,}", re.UNICODE)
MAX_FALLBACK_TOKENS = 8


@dataclass(frozen=True)
class Ranked:
    id: uuid.UUID
    value: float  # distance for semantic lists, rank for keyword lists


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


def _escape_like(value: str) -> str:
    return value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


class RecallStore:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def set_ann_options(self, ef_search: int, iterative_scan: str | None) -> None:
        """Transaction-local options (pooled connections never keep them)."""
        await self.session.execute(
            text("SELECT set_config('hnsw.ef_search', :v, true)"), {"v": str(ef_search)}
        )
        if iterative_scan:
            await self.session.execute(
                text("SELECT set_config('hnsw.iterative_scan', :v, true)"), {"v": iterative_scan}
            )

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
        """Index-safe kNN: the inner query keeps only index-safe residuals so HNSW serves it; the outer
        query applies the subject scope and the project partition to the over-fetched pool."""
        distance = Memory.embedding.cosine_distance(vector)
        inner = (
            select(Memory.id, Memory.subject_id, Memory.project_id, distance.label("distance"))
            .where(
                Memory.tenant_id == scope.tenant_id,
                Memory.embedding.is_not(None),
                Memory.superseded_by.is_(None),
            )
            .order_by(distance)
            .limit(pool)
            .subquery("pool")
        )
        outer = (
            select(inner.c.id, inner.c.distance)
            .where(inner.c.subject_id == scope.subject_id, _partition(inner.c.project_id, project_id))
            .order_by(inner.c.distance)
            .limit(limit)
        )
        return check_scoped(outer, scope)

    async def ann(
        self, scope: Scope, vector: list[float], limit: int, pool: int, project_id: str | None
    ) -> list[Ranked]:
        rows = await self.session.execute(self.ann_statement(scope, vector, limit, pool, project_id))
        return [Ranked(r.id, r.distance) for r in rows]

    async def exact(
        self, scope: Scope, vector: list[float], limit: int, project_id: str | None, include_superseded: bool
    ) -> list[Ranked]:
        """Exact bounded top-k over the subject's own rows (no index scan)."""
        distance = Memory.embedding.cosine_distance(vector)
        stmt = check_scoped(
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
        return [Ranked(r.id, r.distance) for r in await self.session.execute(stmt)]

    async def keyword(
        self, scope: Scope, query: str, limit: int, project_id: str | None, *, match_all: bool = True
    ) -> list[Ranked]:
        """Full-text match over the same scope, ranked by cover density. `match_all` requires every query
        term (strong, selective evidence); otherwise any term may match."""
        all_terms = func.plainto_tsquery("english", query)
        any_term = func.to_tsquery("english", func.replace(func.cast(all_terms, Text), "&", "|"))
        tsquery = all_terms if match_all else any_term
        rank = func.ts_rank_cd(Memory.tsv, tsquery)
        stmt = check_scoped(
            select(Memory.id, rank.label("rank"))
            .where(
                *_subject_rows(scope, False),
                _partition(Memory.project_id, project_id),
                Memory.tsv.op("@@")(tsquery),
            )
            .order_by(rank.desc(), Memory.created_at.desc())
            .limit(limit),
            scope,
        )
        return [Ranked(r.id, r.rank) for r in await self.session.execute(stmt)]

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
        rows = await self.session.execute(stmt)
        return {r.Memory.id: (r.Memory, None if r.score is None else float(r.score)) for r in rows}
