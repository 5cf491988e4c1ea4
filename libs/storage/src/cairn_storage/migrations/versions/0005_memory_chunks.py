"""Chunk vectors of long memories: chunk 0 stays in memories.embedding, chunks 1.. live here.

Revision ID: 0005
Revises: 0004
"""

import sqlalchemy as sa
from alembic import op
from pgvector.sqlalchemy import Vector
from sqlalchemy.dialects.postgresql import UUID

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "memory_chunks",
        sa.Column(
            "memory_id", UUID(as_uuid=True), sa.ForeignKey("memories.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("chunk_index", sa.SmallInteger, nullable=False),
        sa.Column("tenant_id", UUID(as_uuid=True), nullable=False),
        sa.Column("subject_id", sa.String(200), nullable=False),
        sa.Column("embedding", Vector(384), nullable=False),
        sa.PrimaryKeyConstraint("memory_id", "chunk_index"),
    )
    op.create_index("memory_chunks_scope_idx", "memory_chunks", ["tenant_id", "subject_id"])
    op.execute(
        "CREATE INDEX memory_chunks_embedding_hnsw_idx ON memory_chunks "
        "USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64)"
    )


def downgrade() -> None:
    op.drop_table("memory_chunks")
