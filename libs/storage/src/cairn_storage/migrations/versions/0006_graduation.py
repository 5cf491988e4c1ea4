"""Graduation: a memory's graduated article and scope, the sweep's claim mark, a per-tenant threshold.

Revision ID: 0006
Revises: 0005
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import UUID

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("memories", sa.Column("graduated_article_id", UUID(as_uuid=True)))
    op.add_column("memories", sa.Column("graduated_scope", sa.String(10)))
    op.add_column("memories", sa.Column("graduation_attempted_at", sa.DateTime(timezone=True)))
    # The first graduation stamps all three at once (a conditional UPDATE ... WHERE graduated_at IS NULL).
    op.create_check_constraint(
        "memories_graduation_stamp_ck",
        "memories",
        "(graduated_at IS NULL AND graduated_article_id IS NULL AND graduated_scope IS NULL) OR "
        "(graduated_at IS NOT NULL AND graduated_article_id IS NOT NULL "
        "AND graduated_scope IN ('project', 'global'))",
    )
    # The sweep's candidate scan: live, not-yet-graduated memories of one tenant, hottest first.
    op.create_index(
        "memories_graduation_candidates_idx",
        "memories",
        ["tenant_id", sa.text("recall_count DESC"), "id"],
        postgresql_where=sa.text("graduated_at IS NULL AND superseded_by IS NULL"),
    )
    op.add_column("tenants", sa.Column("graduation_recall_threshold", sa.Integer))
    # When the sweep last served the tenant: the least recently served tenants go first (round-robin).
    op.add_column("tenants", sa.Column("graduation_served_at", sa.DateTime(timezone=True)))


def downgrade() -> None:
    op.drop_column("tenants", "graduation_served_at")
    op.drop_column("tenants", "graduation_recall_threshold")
    op.drop_index("memories_graduation_candidates_idx", table_name="memories")
    op.drop_constraint("memories_graduation_stamp_ck", "memories")
    op.drop_column("memories", "graduation_attempted_at")
    op.drop_column("memories", "graduated_scope")
    op.drop_column("memories", "graduated_article_id")
