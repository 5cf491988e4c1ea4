"""Knowledge: articles (+ chunk vectors 1..), merged recall's shown-set, the article access funnel.

The partial unique indexes on articles are the novelty gate's race-free half (title per visibility scope,
body hash per visibility scope, one article per source memory): two concurrent identical proposals meet in
one of them, and the loser reads the winner.

Revision ID: 0007
Revises: 0006
"""

from typing import Any

import sqlalchemy as sa
from alembic import op
from pgvector.sqlalchemy import Vector
from sqlalchemy.dialects.postgresql import ARRAY, TSVECTOR, UUID

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

ARTICLE_TSV = "setweight(to_tsvector('english', title), 'A') || setweight(to_tsvector('english', body), 'B')"


def _ts(name: str) -> sa.Column[Any]:
    return sa.Column(name, sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False)


def upgrade() -> None:
    op.create_table(
        "articles",
        sa.Column("id", UUID(as_uuid=True), primary_key=True),
        sa.Column(
            "tenant_id", UUID(as_uuid=True), sa.ForeignKey("tenants.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("title", sa.String(200), nullable=False),
        sa.Column("body", sa.Text, nullable=False),
        sa.Column("category", sa.String(64)),
        sa.Column("tags", ARRAY(sa.String(64)), nullable=False, server_default="{}"),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("visibility", sa.String(20), nullable=False),
        sa.Column("owner_subject_id", sa.String(200)),
        sa.Column("proposer_subject_id", sa.String(200), nullable=False),
        sa.Column("project_id", UUID(as_uuid=True)),
        sa.Column("source", sa.String(20), nullable=False),
        sa.Column("source_memory_id", sa.String(100)),
        sa.Column("content_hash", sa.String(64), nullable=False),
        sa.Column("embedding", Vector(384), nullable=False),
        sa.Column("embedding_content_hash", sa.String(64), nullable=False),
        sa.Column("embedding_model", sa.String(100)),
        sa.Column("tsv", TSVECTOR, sa.Computed(ARTICLE_TSV, persisted=True)),
        sa.Column("created_by", sa.String(100)),
        _ts("created_at"),
        _ts("updated_at"),
        sa.CheckConstraint("status IN ('published', 'draft')", name="articles_status_ck"),
        sa.CheckConstraint(
            "(visibility = 'tenant' AND owner_subject_id IS NULL) OR "
            "(visibility = 'owner' AND owner_subject_id IS NOT NULL)",
            name="articles_visibility_ck",
        ),
        sa.CheckConstraint("source IN ('agent', 'graduated')", name="articles_source_ck"),
    )
    op.create_index("articles_tenant_created_idx", "articles", ["tenant_id", "created_at"])
    op.execute("CREATE INDEX articles_tsv_idx ON articles USING gin (tsv)")
    op.execute(
        "CREATE INDEX articles_embedding_hnsw_idx ON articles "
        "USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64)"
    )
    # Title: unique per tenant among published tenant-visible articles, per owner among owner-visible
    # ones, per proposer among tenant-visible drafts (a draft reveals nothing to anyone else).
    # Body hash: the same three scopes.
    for column, expr in (("title", "lower(title)"), ("hash", "content_hash")):
        op.execute(
            f"CREATE UNIQUE INDEX articles_tenant_{column}_uniq ON articles (tenant_id, {expr}) "
            "WHERE visibility = 'tenant' AND status = 'published'"
        )
        op.execute(
            f"CREATE UNIQUE INDEX articles_owner_{column}_uniq ON articles "
            f"(tenant_id, owner_subject_id, {expr}) WHERE visibility = 'owner'"
        )
        op.execute(
            f"CREATE UNIQUE INDEX articles_draft_{column}_uniq ON articles "
            f"(tenant_id, proposer_subject_id, {expr}) WHERE visibility = 'tenant' AND status = 'draft'"
        )
    op.execute(
        "CREATE UNIQUE INDEX articles_source_memory_uniq ON articles "
        "(tenant_id, proposer_subject_id, source_memory_id) WHERE source_memory_id IS NOT NULL"
    )
    op.create_table(
        "article_chunks",
        sa.Column(
            "article_id",
            UUID(as_uuid=True),
            sa.ForeignKey("articles.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("chunk_index", sa.SmallInteger, nullable=False),
        sa.Column("tenant_id", UUID(as_uuid=True), nullable=False),
        sa.Column("embedding", Vector(384), nullable=False),
        sa.PrimaryKeyConstraint("article_id", "chunk_index"),
    )
    op.create_index("article_chunks_tenant_idx", "article_chunks", ["tenant_id"])
    op.execute(
        "CREATE INDEX article_chunks_embedding_hnsw_idx ON article_chunks "
        "USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64)"
    )
    op.create_table(
        "recall_shown",
        sa.Column("tenant_id", UUID(as_uuid=True), nullable=False),
        sa.Column("subject_id", sa.String(200), nullable=False),
        sa.Column("session_id", sa.String(400), nullable=False),
        sa.Column("article_id", UUID(as_uuid=True), nullable=False),
        _ts("shown_at"),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("tenant_id", "subject_id", "session_id", "article_id"),
    )
    op.create_index("recall_shown_expiry_idx", "recall_shown", ["expires_at"])
    op.create_table(
        "article_access_events",
        sa.Column("id", sa.BigInteger, primary_key=True, autoincrement=True),
        sa.Column("tenant_id", UUID(as_uuid=True), nullable=False),
        sa.Column(
            "article_id",
            UUID(as_uuid=True),
            sa.ForeignKey("articles.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("access_type", sa.String(20), nullable=False),
        sa.Column("origin_search_id", UUID(as_uuid=True), nullable=False),
        sa.Column("subject_id", sa.String(200), nullable=False),
        sa.Column("key_id", sa.String(100)),
        _ts("created_at"),
        sa.UniqueConstraint("origin_search_id", "article_id", "access_type"),
        sa.CheckConstraint("access_type IN ('surfaced', 'referenced')", name="article_access_type_ck"),
    )
    op.create_index("article_access_events_tenant_idx", "article_access_events", ["tenant_id", "access_type"])


def downgrade() -> None:
    op.drop_table("article_access_events")
    op.drop_table("recall_shown")
    op.drop_table("article_chunks")
    op.drop_table("articles")
