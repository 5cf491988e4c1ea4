"""Idempotent session appends: a turn written under an Idempotency-Key carries its write id, unique per
(tenant, subject), so a retry after a lost reply finds the turn instead of appending a twin. (Long-term
memories need no column: their primary key is the write id.)

Revision ID: 0011
Revises: 0010
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import UUID

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("session_memories", sa.Column("write_id", UUID(as_uuid=True), nullable=True))
    op.create_index(
        "session_memories_write_id_idx",
        "session_memories",
        ["tenant_id", "subject_id", "write_id"],
        unique=True,
        postgresql_where=sa.text("write_id IS NOT NULL"),
    )


def downgrade() -> None:
    op.drop_index("session_memories_write_id_idx", table_name="session_memories")
    op.drop_column("session_memories", "write_id")
