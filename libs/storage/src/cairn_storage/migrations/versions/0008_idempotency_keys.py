"""Idempotency keys of write requests: the first response, replayed to repeats for 24 h.

Revision ID: 0008
Revises: 0007
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import UUID

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "idempotency_keys",
        sa.Column("tenant_id", UUID(as_uuid=True), nullable=False),
        sa.Column("subject_id", sa.String(200), nullable=False),
        sa.Column("key", sa.String(255), nullable=False),
        sa.Column("request_hash", sa.String(64), nullable=False),
        sa.Column("owner", UUID(as_uuid=True), nullable=False),
        sa.Column("status_code", sa.SmallInteger),
        sa.Column("response_body", sa.LargeBinary),
        sa.Column("locked_until", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.PrimaryKeyConstraint("tenant_id", "subject_id", "key"),
    )
    op.create_index("idempotency_keys_expiry_idx", "idempotency_keys", ["expires_at"])


def downgrade() -> None:
    op.drop_table("idempotency_keys")
