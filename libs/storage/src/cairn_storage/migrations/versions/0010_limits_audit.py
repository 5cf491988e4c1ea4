"""Read rate limits per tenant, and the append-only audit trail of key and impersonation events.

Revision ID: 0010
Revises: 0009
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB, UUID

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

# Append-only for every role the services use: a row, once written, is never changed or removed
# (an operator who must purge history drops the trigger deliberately, in a migration that says why).
_REFUSE = """
CREATE FUNCTION audit_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'audit_events is append-only (% refused)', TG_OP USING ERRCODE = 'insufficient_privilege';
END
$$
"""


def upgrade() -> None:
    op.add_column("tenants", sa.Column("read_rate_limit_per_second", sa.Float))
    op.add_column("tenants", sa.Column("read_rate_limit_burst", sa.Integer))
    op.create_table(
        "audit_events",
        sa.Column("id", sa.BigInteger, sa.Identity(always=True), primary_key=True),
        sa.Column("action", sa.String(50), nullable=False),
        sa.Column("actor_key_id", UUID(as_uuid=True)),
        sa.Column("actor_role", sa.String(20)),
        sa.Column("actor_tenant_id", UUID(as_uuid=True)),
        sa.Column("tenant_id", UUID(as_uuid=True)),
        sa.Column("target_key_id", UUID(as_uuid=True)),
        sa.Column("target_role", sa.String(20)),
        sa.Column("target_agent_id", sa.String(200)),
        sa.Column("detail", JSONB, nullable=False, server_default=sa.text("'{}'::jsonb")),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
    )
    op.create_index("audit_events_tenant_idx", "audit_events", ["tenant_id", "id"])
    op.execute(_REFUSE)
    op.execute(
        "CREATE TRIGGER audit_events_no_change BEFORE UPDATE OR DELETE ON audit_events "
        "FOR EACH ROW EXECUTE FUNCTION audit_events_append_only()"
    )
    op.execute(
        "CREATE TRIGGER audit_events_no_truncate BEFORE TRUNCATE ON audit_events "
        "FOR EACH STATEMENT EXECUTE FUNCTION audit_events_append_only()"
    )


def downgrade() -> None:
    op.drop_table("audit_events")
    op.execute("DROP FUNCTION audit_events_append_only()")
    op.drop_column("tenants", "read_rate_limit_burst")
    op.drop_column("tenants", "read_rate_limit_per_second")
