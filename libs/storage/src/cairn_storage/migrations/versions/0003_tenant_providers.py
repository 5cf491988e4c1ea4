"""Per-tenant model providers (bring your own key; keys encrypted at rest).

Revision ID: 0003
Revises: 0002
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import UUID

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "tenant_providers",
        sa.Column(
            "tenant_id", UUID(as_uuid=True), sa.ForeignKey("tenants.id", ondelete="CASCADE"), primary_key=True
        ),
        sa.Column("embedding_base_url", sa.String(500)),
        sa.Column("embedding_model", sa.String(200)),
        sa.Column("embedding_api_key", sa.Text),
        sa.Column("compiler_base_url", sa.String(500)),
        sa.Column("compiler_model", sa.String(200)),
        sa.Column("compiler_api_key", sa.Text),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("tenant_providers")
