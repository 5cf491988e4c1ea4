"""Partial index for the quota check: counting a subject's live rows becomes an index-only scan.

Revision ID: 0004
Revises: 0003
"""

from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        "CREATE INDEX memories_live_scope_idx ON memories (tenant_id, subject_id) WHERE superseded_by IS NULL"
    )


def downgrade() -> None:
    op.execute("DROP INDEX memories_live_scope_idx")
