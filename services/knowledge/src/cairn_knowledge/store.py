"""Every query of the knowledge service. Articles are tenant-scoped; every statement here is built on
`_tenant()` (the tenant predicate) plus one of the visibility predicates, so no query can reach another
tenant's articles or another subject's owner articles and drafts."""

import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, Select, Text, and_, delete, func, literal, or_, select, text
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import undefer

from cairn_contracts.knowledge import ArticleStatus, ListArticlesRequest, Visibility
from cairn_scope import Scope
from cairn_storage.models import Article, ArticleChunk, Project

PUBLISHED = ArticleStatus.published.value
DRAFT = ArticleStatus.draft.value
TENANT = Visibility.tenant.value
OWNER = Visibility.owner.value


def as_uuid(value: str | None) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(value))
    except (ValueError, TypeError):
        return None


def _tenant(scope: Scope) -> ColumnElement[bool]:
    return Article.tenant_id == uuid.UUID(scope.tenant_id)


def readable(scope: Scope) -> ColumnElement[bool]:
    """What GET and list show a subject: published tenant-visible articles, its own owner-visible ones and
    its own drafts. Everything else is indistinguishable from absent."""
    return and_(
        _tenant(scope),
        or_(
            and_(Article.visibility == TENANT, Article.status == PUBLISHED),
            Article.owner_subject_id == scope.subject_id,
            Article.proposer_subject_id == scope.subject_id,
        ),
    )


def searchable(scope: Scope) -> ColumnElement[bool]:
    """What search and merged recall see: published articles, tenant-visible or the subject's own."""
    return and_(
        _tenant(scope),
        Article.status == PUBLISHED,
        or_(Article.visibility == TENANT, Article.owner_subject_id == scope.subject_id),
    )


def _partition(project_id: str | None) -> ColumnElement[bool]:
    """Global articles plus the given project's (an unknown project reads as an empty partition)."""
    if project_id:
        return or_(Article.project_id.is_(None), Article.project_id == uuid.UUID(project_id))
    return Article.project_id.is_(None)


def keyword_query(query: str) -> tuple[Any, Any]:
    """THE keyword ranking (one function, so a shared BM25-like ranker can replace it): any-term full-text
    match (an OR of the query's lexemes) ranked by cover density over the weighted title + body vector.
    Returns (tsquery, rank expression)."""
    all_terms = func.plainto_tsquery("english", query)
    any_term = func.to_tsquery("english", func.replace(func.cast(all_terms, Text), "&", "|"))
    return any_term, func.ts_rank_cd(Article.tsv, any_term)


@dataclass(frozen=True)
class Ranked:
    id: uuid.UUID
    value: float  # cosine distance for semantic lists, ts_rank_cd for keyword lists


@dataclass(frozen=True)
class Found:
    """A search candidate's display fields, best-chunk similarity and chunk-0 vector."""

    id: uuid.UUID
    title: str
    category: str | None
    tags: list[str]
    snippet: str
    project_id: uuid.UUID | None
    visibility: str
    source: str
    embedding_content_hash: str
    similarity: float | None
    vector: list[float] | None


class KnowledgeStore:
    """Queries over one AsyncSession; the caller owns the transaction."""

    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def project_in_tenant(self, project_id: str, tenant_id: str) -> bool:
        found = await self.session.scalar(
            select(Project.id).where(
                Project.id == uuid.UUID(project_id), Project.tenant_id == uuid.UUID(tenant_id)
            )
        )
        return found is not None

    # ---- the gate -------------------------------------------------------------------------------

    async def by_source_memory(self, scope: Scope, memory_id: str) -> Article | None:
        stmt = select(Article).where(
            readable(scope),
            Article.proposer_subject_id == scope.subject_id,
            Article.source_memory_id == memory_id,
        )
        return (await self.session.execute(stmt)).scalars().first()

    async def by_content_hash(self, scope: Scope, content_hash: str) -> Article | None:
        """The canonical article with this body the proposer can see (published first, oldest first)."""
        stmt = (
            select(Article)
            .where(readable(scope), Article.content_hash == content_hash)
            .order_by((Article.status == PUBLISHED).desc(), Article.created_at, Article.id)
        )
        return (await self.session.execute(stmt)).scalars().first()

    async def by_title(self, scope: Scope, title: str, visibility: Visibility) -> Article | None:
        """An article holding this title in the proposal's visibility scope (the unique indexes' scopes)."""
        same = func.lower(Article.title) == title.lower()
        if visibility is Visibility.owner:
            scoped = and_(Article.visibility == OWNER, Article.owner_subject_id == scope.subject_id)
        else:
            scoped = and_(
                Article.visibility == TENANT,
                or_(
                    Article.status == PUBLISHED,
                    and_(Article.status == DRAFT, Article.proposer_subject_id == scope.subject_id),
                ),
            )
        stmt = (
            select(Article)
            .where(_tenant(scope), scoped, same)
            .order_by((Article.status == PUBLISHED).desc(), Article.created_at)
        )
        return (await self.session.execute(stmt)).scalars().first()

    async def nearest_published(self, scope: Scope, vector: list[float]) -> tuple[Article, float] | None:
        """The visible published article closest to `vector` (chunk 0 against chunk 0), with its cosine."""
        distance = Article.embedding.cosine_distance(vector)
        stmt = select(Article, distance.label("d")).where(searchable(scope)).order_by(distance).limit(1)
        row = (await self.session.execute(stmt)).first()
        return None if row is None else (row.Article, 1.0 - float(row.d))

    async def insert(self, values: dict[str, Any], chunks: list[list[float]]) -> Article | None:
        """Insert unless a gate constraint already holds this article; None means another write won."""
        stmt = insert(Article).values(**values).on_conflict_do_nothing().returning(Article.id)
        new_id = await self.session.scalar(stmt)
        if new_id is None:
            return None
        if chunks:
            await self.session.execute(
                insert(ArticleChunk),
                [
                    {"article_id": new_id, "chunk_index": i, "tenant_id": values["tenant_id"], "embedding": v}
                    for i, v in enumerate(chunks, start=1)
                ],
            )
        return await self.session.get(Article, new_id)

    # ---- reads ----------------------------------------------------------------------------------

    async def get(self, scope: Scope, article_id: str, *, with_body: bool = True) -> Article | None:
        aid = as_uuid(article_id)
        if aid is None:
            return None
        stmt = select(Article).where(readable(scope), Article.id == aid)
        if with_body:
            stmt = stmt.options(undefer(Article.body))
        return (await self.session.execute(stmt)).scalars().first()

    def _list_filter(self, scope: Scope, query: ListArticlesRequest) -> Select[Any]:
        where = _tenant(scope) if query.all_subjects and scope.is_superadmin else readable(scope)
        stmt = select(Article).where(where)
        if query.category:
            stmt = stmt.where(Article.category == query.category)
        if query.tag:
            stmt = stmt.where(Article.tags.contains([query.tag]))
        if query.status is not None:
            stmt = stmt.where(Article.status == query.status.value)
        if query.visibility is not None:
            stmt = stmt.where(Article.visibility == query.visibility.value)
        if query.source is not None:
            stmt = stmt.where(Article.source == query.source.value)
        if query.project_id:
            stmt = stmt.where(Article.project_id == uuid.UUID(query.project_id))
        return stmt

    async def list_articles(self, scope: Scope, query: ListArticlesRequest) -> tuple[list[Article], int]:
        stmt = self._list_filter(scope, query)
        total = await self.session.scalar(select(func.count()).select_from(stmt.subquery()))
        page = stmt.order_by(Article.created_at.desc(), Article.id).limit(query.limit).offset(query.offset)
        return list((await self.session.execute(page)).scalars().all()), int(total or 0)

    async def delete_any(self, scope: Scope, article_id: str) -> Article | None:
        """Oversight: a superadmin impersonating the tenant deletes any of its articles."""
        aid = as_uuid(article_id)
        if aid is None or not scope.is_superadmin:
            return None
        stmt = delete(Article).where(_tenant(scope), Article.id == aid).returning(Article)
        return (await self.session.execute(stmt)).scalars().first()

    async def visible_ids(self, scope: Scope, ids: list[str]) -> list[str]:
        wanted = [u for u in (as_uuid(i) for i in ids) if u is not None]
        if not wanted:
            return []
        stmt = select(Article.id).where(readable(scope), Article.id.in_(wanted))
        found = {str(i) for i in (await self.session.execute(stmt)).scalars()}
        return [i for i in dict.fromkeys(str(u) for u in wanted) if i in found]

    # ---- search ---------------------------------------------------------------------------------

    async def articles_at_most(self, scope: Scope, cap: int) -> int:
        inner = select(literal(1)).where(_tenant(scope)).limit(cap + 1)
        return int(await self.session.scalar(select(func.count()).select_from(inner.subquery())) or 0)

    async def set_ann_options(self, ef_search: int, iterative_scan: str | None) -> None:
        """Transaction-local options (pooled connections never keep them), in one round trip."""
        # Only where the probe accepted it: an older pgvector refuses the name itself.
        scan = ", set_config('hnsw.iterative_scan', :scan, true)" if iterative_scan else ""
        params = {"ef": str(ef_search)} | ({"scan": iterative_scan} if iterative_scan else {})
        await self.session.execute(text(f"SELECT set_config('hnsw.ef_search', :ef, true){scan}"), params)

    async def semantic(
        self, scope: Scope, vector: list[float], limit: int, project_id: str | None, *, ann: bool, pool: int
    ) -> list[Ranked]:
        """Articles by their best chunk's cosine distance. Exact: each side keeps its own top `limit` of the
        visible articles (a head top-N sort, the chunks' best per article), which holds every article of
        the overall top `limit` whichever of its vectors is best. ANN: each vector index over-fetches `pool`
        rows with only the tenant residual (index-safe); the visibility and partition filters apply to
        that pool."""
        if not ann:
            return await self._exact(scope, vector, limit, project_id)
        head = Article.embedding.cosine_distance(vector)
        tail = ArticleChunk.embedding.cosine_distance(vector)
        heads = (
            select(Article.id.label("aid"), head.label("d")).where(_tenant(scope)).order_by(head).limit(pool)
        )
        tails = (
            select(ArticleChunk.article_id.label("aid"), tail.label("d"))
            .where(ArticleChunk.tenant_id == uuid.UUID(scope.tenant_id))
            .order_by(tail)
            .limit(pool)
        )
        both = heads.subquery().select().union_all(tails.subquery().select()).subquery("pool")
        best = func.min(both.c.d)
        stmt = (
            select(both.c.aid, best.label("d"))
            .join(Article, Article.id == both.c.aid)
            .where(searchable(scope), _partition(project_id))
            .group_by(both.c.aid)
            .order_by(best, both.c.aid)
            .limit(limit)
        )
        return [Ranked(r.aid, float(r.d)) for r in await self.session.execute(stmt)]

    async def _exact(
        self, scope: Scope, vector: list[float], limit: int, project_id: str | None
    ) -> list[Ranked]:
        # Every visible article is scored (a sequential scan; the vectors are stored inline, migration
        # 0012). Index scans are off for this transaction: the planner would otherwise serve the head
        # top-N through the HNSW index, which is approximate (and stops at ef_search rows).
        await self.session.execute(text("SELECT set_config('enable_indexscan', 'off', true)"))
        head = Article.embedding.cosine_distance(vector)
        heads = (
            select(Article.id.label("aid"), head.label("d"))
            .where(searchable(scope), _partition(project_id))
            .order_by(head, Article.id)
            .limit(limit)
        )
        tail = func.min(ArticleChunk.embedding.cosine_distance(vector))
        tails = (
            select(ArticleChunk.article_id.label("aid"), tail.label("d"))
            .join(Article, Article.id == ArticleChunk.article_id)
            .where(
                ArticleChunk.tenant_id == uuid.UUID(scope.tenant_id),
                searchable(scope),
                _partition(project_id),
            )
            .group_by(ArticleChunk.article_id)
            .order_by(tail, ArticleChunk.article_id)
            .limit(limit)
        )
        both = heads.subquery().select().union_all(tails.subquery().select()).subquery("pool")
        best = func.min(both.c.d)
        stmt = (
            select(both.c.aid, best.label("d")).group_by(both.c.aid).order_by(best, both.c.aid).limit(limit)
        )
        return [Ranked(r.aid, float(r.d)) for r in await self.session.execute(stmt)]

    async def keyword(self, scope: Scope, query: str, limit: int, project_id: str | None) -> list[Ranked]:
        tsquery, rank = keyword_query(query)
        stmt = (
            select(Article.id, rank.label("rank"))
            .where(searchable(scope), _partition(project_id), Article.tsv.op("@@")(tsquery))
            .order_by(rank.desc(), Article.created_at.desc(), Article.id)
            .limit(limit)
        )
        return [Ranked(r.id, float(r.rank)) for r in await self.session.execute(stmt)]

    async def substring(self, scope: Scope, query: str, limit: int, project_id: str | None) -> list[Ranked]:
        """Last resort of the degraded path (a query with no indexable lexeme): a title/body substring."""
        pattern = "%" + query.strip().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        stmt = (
            select(Article.id)
            .where(
                searchable(scope),
                _partition(project_id),
                or_(Article.title.ilike(pattern, escape="\\"), Article.body.ilike(pattern, escape="\\")),
            )
            .order_by(Article.created_at.desc(), Article.id)
            .limit(limit)
        )
        return [Ranked(i, 0.0) for i in (await self.session.execute(stmt)).scalars()]

    async def found(
        self, scope: Scope, ids: list[uuid.UUID], vector: list[float] | None, snippet_chars: int
    ) -> dict[uuid.UUID, Found]:
        """Display fields, best-chunk similarity (with a query vector) and the chunk-0 vector of `ids`."""
        if not ids:
            return {}
        similarity: Any = literal(None)
        if vector is not None:
            best_tail = (
                select(func.min(ArticleChunk.embedding.cosine_distance(vector)))
                .where(ArticleChunk.article_id == Article.id)
                .scalar_subquery()
            )
            similarity = 1 - func.least(Article.embedding.cosine_distance(vector), best_tail)
        stmt = select(
            Article.id,
            Article.title,
            Article.category,
            Article.tags,
            func.left(Article.body, snippet_chars + 1).label("head"),
            Article.project_id,
            Article.visibility,
            Article.source,
            Article.embedding_content_hash,
            Article.embedding,
            similarity.label("similarity"),
        ).where(searchable(scope), Article.id.in_(ids))
        out: dict[uuid.UUID, Found] = {}
        for r in await self.session.execute(stmt):
            head = " ".join(str(r.head).split())
            snippet = head if len(head) <= snippet_chars else head[:snippet_chars].rsplit(" ", 1)[0] + " …"
            out[r.id] = Found(
                id=r.id,
                title=r.title,
                category=r.category,
                tags=list(r.tags or []),
                snippet=snippet,
                project_id=r.project_id,
                visibility=r.visibility,
                source=r.source,
                embedding_content_hash=r.embedding_content_hash,
                similarity=None if r.similarity is None else float(r.similarity),
                vector=None if r.embedding is None else list(r.embedding),
            )
        return out
