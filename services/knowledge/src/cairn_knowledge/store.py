"""The knowledge service's gate, read and write queries (search is `search_store`).

Articles are tenant-scoped; every statement here is built on `_tenant()` (the tenant predicate) plus one
of the visibility predicates, so no query can reach another tenant's articles or another subject's owner
articles and drafts."""

import uuid
from typing import Any

from sqlalchemy import ColumnElement, Select, and_, delete, func, or_, select
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
