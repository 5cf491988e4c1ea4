"""Promotion runs: the hourly compile budget counts these (finished and in-flight alike).

Revision ID: 0002
Revises: 0001
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import UUID

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "promotion_runs",
        sa.Column("id", UUID(as_uuid=True), primary_key=True),
        sa.Column("tenant_id", UUID(as_uuid=True), nullable=False),
        sa.Column("subject_id", sa.String(200), nullable=False),
        sa.Column("session_id", sa.String(400), nullable=False),
        sa.Column("status", sa.String(20), nullable=False, server_default="reserved"),
        sa.Column("reserved_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True)),
    )
    op.create_index("promotion_runs_budget_idx", "promotion_runs", ["tenant_id", "reserved_at"])


def downgrade() -> None:
    op.drop_table("promotion_runs")
