"""Initial schema: identity, projects, long-term and session memory, promotion watermarks.

Revision ID: 0001
Revises:
"""

from typing import Any

import sqlalchemy as sa
from alembic import op
from pgvector.sqlalchemy import Vector
from sqlalchemy.dialects.postgresql import ARRAY, JSONB, TSVECTOR, UUID

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def _created() -> sa.Column[Any]:
    return sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False)


def upgrade() -> None:
    op.execute("CREATE EXTENSION IF NOT EXISTS vector")
    op.create_table(
        "tenants",
        sa.Column("id", UUID(as_uuid=True), primary_key=True),
        sa.Column("name", sa.String(200), nullable=False, unique=True),
        sa.Column("memory_quota", sa.Integer),
        sa.Column("promotion_budget_per_hour", sa.Integer),
        sa.Column("rate_limit_per_second", sa.Float),
        sa.Column("rate_limit_burst", sa.Integer),
        _created(),
    )
    op.create_table(
        "api_keys",
        sa.Column("id", UUID(as_uuid=True), primary_key=True),
        sa.Column("tenant_id", UUID(as_uuid=True), sa.ForeignKey("tenants.id", ondelete="CASCADE")),
        sa.Column("role", sa.String(20), nullable=False),
        sa.Column("agent_id", sa.String(200)),
        sa.Column("name", sa.String(200)),
        sa.Column("prefix", sa.String(32), nullable=False),
        sa.Column("key_hash", sa.String(64), nullable=False, unique=True),
        _created(),
        sa.Column("revoked_at", sa.DateTime(timezone=True)),
    )
    op.create_index("ix_api_keys_tenant_id", "api_keys", ["tenant_id"])
    op.create_table(
        "rate_buckets",
        sa.Column("key_id", UUID(as_uuid=True), primary_key=True),
        sa.Column("tokens", sa.Float, nullable=False),
        sa.Column("allowed", sa.Boolean, nullable=False, server_default=sa.true()),
        sa.Column("rate", sa.Float, nullable=False),
        sa.Column("burst", sa.Integer, nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "projects",
        sa.Column("id", UUID(as_uuid=True), primary_key=True),
        sa.Column(
            "tenant_id", UUID(as_uuid=True), sa.ForeignKey("tenants.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("slug", sa.String(100), nullable=False),
        sa.Column("repo_url", sa.String(500)),
        sa.Column("repo_key", sa.String(300)),
        _created(),
        sa.UniqueConstraint("tenant_id", "slug"),
    )
    op.create_index("projects_tenant_repo_idx", "projects", ["tenant_id", "repo_key"])
    op.create_table(
        "memories",
        sa.Column("id", UUID(as_uuid=True), primary_key=True),
        sa.Column("tenant_id", UUID(as_uuid=True), nullable=False),
        sa.Column("subject_id", sa.String(200), nullable=False),
        sa.Column("project_id", UUID(as_uuid=True)),
        sa.Column("text", sa.Text, nullable=False),
        sa.Column("tsv", TSVECTOR, sa.Computed("to_tsvector('english', text)", persisted=True)),
        sa.Column("embedding", Vector(384)),
        sa.Column("embedding_content_hash", sa.String(64)),
        sa.Column("embedding_model", sa.String(100)),
        sa.Column("confidence", sa.Float, nullable=False, server_default="1.0"),
        sa.Column("source", sa.String(20), nullable=False, server_default="explicit"),
        sa.Column("source_session_id", sa.String(400)),
        sa.Column("tags", ARRAY(sa.String(64)), nullable=False, server_default="{}"),
        sa.Column("metadata", JSONB, nullable=False, server_default="{}"),
        sa.Column("superseded_by", UUID(as_uuid=True)),
        sa.Column("recall_count", sa.Integer, nullable=False, server_default="0"),
        sa.Column("last_recalled_at", sa.DateTime(timezone=True)),
        sa.Column("graduated_at", sa.DateTime(timezone=True)),
        _created(),
    )
    op.create_index("memories_scope_created_idx", "memories", ["tenant_id", "subject_id", "created_at"])
    op.execute(
        "CREATE INDEX memories_live_embedding_hnsw_idx ON memories "
        "USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64) "
        "WHERE superseded_by IS NULL"
    )
    op.execute(
        "CREATE UNIQUE INDEX memories_promoted_hash_uniq ON memories "
        "(tenant_id, subject_id, embedding_content_hash) WHERE source = 'promoted'"
    )
    op.create_index("memories_tsv_idx", "memories", ["tsv"], postgresql_using="gin")
    op.create_index(
        "memories_pending_embedding_idx",
        "memories",
        ["created_at"],
        postgresql_where=sa.text("embedding IS NULL"),
    )
    op.create_table(
        "session_memories",
        sa.Column("seq", sa.BigInteger, primary_key=True, autoincrement=True),
        sa.Column("tenant_id", UUID(as_uuid=True), nullable=False),
        sa.Column("subject_id", sa.String(200), nullable=False),
        sa.Column("session_id", sa.String(400), nullable=False),
        sa.Column("role", sa.String(20), nullable=False),
        sa.Column("content", sa.Text, nullable=False),
        sa.Column("metadata", JSONB, nullable=False, server_default="{}"),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column(
            "created_at", sa.DateTime(timezone=True), server_default=sa.func.clock_timestamp(), nullable=False
        ),
    )
    op.create_index(
        "session_memories_scope_idx", "session_memories", ["tenant_id", "subject_id", "session_id", "seq"]
    )
    op.create_index("session_memories_expiry_idx", "session_memories", ["expires_at"])
    op.create_table(
        "session_promotions",
        sa.Column("id", UUID(as_uuid=True), primary_key=True),
        sa.Column("tenant_id", UUID(as_uuid=True), nullable=False),
        sa.Column("subject_id", sa.String(200), nullable=False),
        sa.Column("session_id", sa.String(400), nullable=False),
        sa.Column("fingerprint", sa.String(64), nullable=False),
        sa.Column("promoted_count", sa.Integer, nullable=False, server_default="0"),
        sa.Column("dropped_count", sa.Integer, nullable=False, server_default="0"),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.UniqueConstraint("tenant_id", "subject_id", "session_id"),
    )


def downgrade() -> None:
    for table in (
        "session_promotions",
        "session_memories",
        "memories",
        "projects",
        "rate_buckets",
        "api_keys",
        "tenants",
    ):
        op.drop_table(table)
