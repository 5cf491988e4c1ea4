"""Row-level security on the scoped tables: the database's own second line behind the scope guard.

Each policy admits a row only when the transaction's settings name its tenant and subject (set by the
engine hook, `cairn_storage.scope_hook`, from the statement it walked) or declare superadmin oversight of
the tenant (`cairn.all_subjects`), or an audited maintenance reason (`cairn.maintenance`). A transaction
that set nothing sees no row and can write none. FORCE makes the policies bind the tables' owner too;
superusers and BYPASSRLS roles still skip them, so the services connect as a member of `cairn_service`
(NOLOGIN, DML only; `python -m cairn_storage.roles` creates the login role).

The knowledge tables are tenant-shared by design (visibility lives in the article row) and are not
covered here: their isolation is the tenant predicate their store builds.

Revision ID: 0014
Revises: 0013
"""

from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

SCOPED = ("memories", "memory_chunks", "session_memories", "session_promotions")
SERVICE_ROLE = "cairn_service"

_ALLOWED = """
    coalesce(current_setting('cairn.maintenance', true), '') <> ''
    OR (
        tenant_id = nullif(current_setting('cairn.tenant_id', true), '')::uuid
        AND (
            subject_id = current_setting('cairn.subject_id', true)
            OR coalesce(current_setting('cairn.all_subjects', true), '') = 'on'
        )
    )
"""


def upgrade() -> None:
    op.execute(
        f"""
        DO $$ BEGIN
            IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{SERVICE_ROLE}') THEN
                CREATE ROLE {SERVICE_ROLE} NOLOGIN NOSUPERUSER NOBYPASSRLS;
            END IF;
        END $$
        """
    )
    op.execute(f"GRANT USAGE ON SCHEMA public TO {SERVICE_ROLE}")
    op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {SERVICE_ROLE}")
    op.execute(f"GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA public TO {SERVICE_ROLE}")
    # Tables later migrations create (as this same role) are the services' too.
    op.execute(
        f"ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO {SERVICE_ROLE}"
    )
    op.execute(
        f"ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT USAGE, SELECT, UPDATE ON SEQUENCES TO {SERVICE_ROLE}"
    )
    for table in SCOPED:
        op.execute(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")
        op.execute(f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY")
        op.execute(f"CREATE POLICY {table}_scope ON {table} USING ({_ALLOWED}) WITH CHECK ({_ALLOWED})")


def downgrade() -> None:
    for table in SCOPED:
        op.execute(f"DROP POLICY IF EXISTS {table}_scope ON {table}")
        op.execute(f"ALTER TABLE {table} NO FORCE ROW LEVEL SECURITY")
        op.execute(f"ALTER TABLE {table} DISABLE ROW LEVEL SECURITY")
