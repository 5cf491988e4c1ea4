"""Article rows to contract models."""

from cairn_contracts.knowledge import Article, ArticleSource, ArticleStatus, Visibility
from cairn_storage.models import Article as ArticleRow


def article_out(row: ArticleRow, *, body: str | None = None) -> Article:
    return Article(
        id=str(row.id),
        title=row.title,
        body=body,
        category=row.category,
        tags=list(row.tags or []),
        status=ArticleStatus(row.status),
        visibility=Visibility(row.visibility),
        owner_subject_id=row.owner_subject_id,
        project_id=str(row.project_id) if row.project_id else None,
        source=ArticleSource(row.source),
        source_memory_id=row.source_memory_id,
        created_by=row.created_by,
        created_at=row.created_at,
        updated_at=row.updated_at,
    )
