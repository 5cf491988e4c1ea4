"""Per-tenant usage per UTC day (writes, session bytes, recalls, embedded tokens, compile calls, live rows).

Revision ID: 0009
Revises: 0008
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import UUID

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "tenant_usage",
        sa.Column("tenant_id", UUID(as_uuid=True), sa.ForeignKey("tenants.id", ondelete="CASCADE")),
        sa.Column("day", sa.Date, nullable=False),
        sa.Column("writes", sa.BigInteger, server_default="0", nullable=False),
        sa.Column("session_bytes", sa.BigInteger, server_default="0", nullable=False),
        sa.Column("recalls", sa.BigInteger, server_default="0", nullable=False),
        sa.Column("embedded_tokens", sa.BigInteger, server_default="0", nullable=False),
        sa.Column("compile_calls", sa.BigInteger, server_default="0", nullable=False),
        sa.Column("live_rows", sa.BigInteger, server_default="0", nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.PrimaryKeyConstraint("tenant_id", "day"),
    )


def downgrade() -> None:
    op.drop_table("tenant_usage")
