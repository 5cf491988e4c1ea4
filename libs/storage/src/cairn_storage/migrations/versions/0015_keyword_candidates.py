"""Keyword candidates of a large subject through its own GIN index, under row-level security.

PostgreSQL evaluates a row-level-security policy's quals before any non-leakproof qual of the query, and
`tsvector @@ tsquery` is not leakproof, so as the services' RLS-bound role the `@@` of a large subject's
BM25 can never be an index condition: its partial GIN index (cairn_recall.subject_index) goes unused and
every row of the subject is read and matched (docs/performance.md measured 46.6 -> 144 ms on a 20k-row
subject).

`cairn_keyword_candidates(tenant, subject, query)` is the one narrow door past that: a SECURITY DEFINER
function owned by the NOLOGIN role `cairn_search`, whose own policy admits every row so that the planner may
use the GIN index, and which returns only the ids of live rows of the (tenant, subject) that the calling
transaction's own settings name (the same settings the `memories_scope` policy reads). A caller can
therefore learn nothing its policy would hide: called with any other scope it returns no row. Only
`cairn_service` may execute it; nobody logs in as, or is granted, `cairn_search` except the migrating role.

Revision ID: 0015
Revises: 0014
"""

from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

SEARCH_ROLE = "cairn_search"
SERVICE_ROLE = "cairn_service"
FUNCTION = "cairn_keyword_candidates(uuid, text, tsquery)"


def upgrade() -> None:
    op.execute(
        f"""
        DO $$ BEGIN
            IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{SEARCH_ROLE}') THEN
                CREATE ROLE {SEARCH_ROLE} NOLOGIN NOSUPERUSER NOBYPASSRLS;
            END IF;
        END $$
        """
    )
    # Giving the function to cairn_search needs membership (a CREATEROLE owner holds ADMIN on its roles).
    op.execute(f"GRANT {SEARCH_ROLE} TO CURRENT_USER")
    op.execute(f"GRANT SELECT (id, tenant_id, subject_id, superseded_by, tsv) ON memories TO {SEARCH_ROLE}")
    op.execute(f"CREATE POLICY memories_search ON memories FOR SELECT TO {SEARCH_ROLE} USING (true)")
    # ROWS 200: the planner drives the caller's join from these ids (primary-key lookups) instead of
    # reading the whole subject to hash them. force_custom_plan: the arguments are planned as constants, so the subject's partial GIN index
    # (predicate on literal tenant and subject) can serve the match.
    op.execute(
        f"""
        CREATE FUNCTION {FUNCTION} RETURNS SETOF uuid
        LANGUAGE sql STABLE SECURITY DEFINER ROWS 200
        SET search_path = pg_catalog, public
        SET plan_cache_mode = force_custom_plan
        AS $$
            SELECT m.id FROM public.memories m
            WHERE m.tenant_id = $1 AND m.subject_id = $2 AND m.superseded_by IS NULL AND m.tsv @@ $3
              AND $1 = nullif(current_setting('cairn.tenant_id', true), '')::uuid
              AND $2 = current_setting('cairn.subject_id', true)
        $$
        """
    )
    op.execute(f"ALTER FUNCTION {FUNCTION} OWNER TO {SEARCH_ROLE}")
    op.execute(f"REVOKE ALL ON FUNCTION {FUNCTION} FROM PUBLIC")
    op.execute(f"GRANT EXECUTE ON FUNCTION {FUNCTION} TO {SERVICE_ROLE}")


def downgrade() -> None:
    op.execute(f"DROP FUNCTION IF EXISTS {FUNCTION}")
    op.execute("DROP POLICY IF EXISTS memories_search ON memories")
    op.execute(f"REVOKE ALL ON memories FROM {SEARCH_ROLE}")
