"""A version per tenant's knowledge base, moved by triggers on every write to its articles (issue #10):

`knowledge_versions(tenant_id, version)` is bumped once per statement that inserts, updates or deletes
articles or article chunks of the tenant, whoever writes them (the gate, oversight deletes, a bulk COPY,
a tenant's cascade). A knowledge replica keeps a copy of a small tenant's published article vectors in
memory (cairn_knowledge.vector_cache) and serves exact search from it only while the version it loaded is
still the tenant's version; any write makes the next search take the SQL path until the copy is reloaded.

No foreign key: a tenant's deletion cascades into its articles, whose trigger would otherwise insert a
version row that references the tenant being deleted.

Revision ID: 0016
Revises: 0015
"""

from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

_TABLES = ("articles", "article_chunks")
_EVENTS = (("insert", "NEW"), ("update", "NEW"), ("delete", "OLD"))

# One upsert per statement over its transition table, tenants in a fixed order (no deadlock between two
# statements that touch the same tenants).
UPGRADE = (
    """
CREATE TABLE knowledge_versions (
    tenant_id uuid PRIMARY KEY,
    version bigint NOT NULL DEFAULT 0
)""",
    """
CREATE FUNCTION knowledge_versions_bump() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO knowledge_versions AS v (tenant_id, version)
    SELECT DISTINCT tenant_id, 1 FROM changed_rows ORDER BY tenant_id
    ON CONFLICT (tenant_id) DO UPDATE SET version = v.version + 1;
    RETURN NULL;
END $$""",
    "INSERT INTO knowledge_versions (tenant_id, version) SELECT DISTINCT tenant_id, 1 FROM articles",
    *(
        f"CREATE TRIGGER {table}_version_{event} AFTER {event.upper()} ON {table}"
        f" REFERENCING {which} TABLE AS changed_rows"
        " FOR EACH STATEMENT EXECUTE FUNCTION knowledge_versions_bump()"
        for table in _TABLES
        for event, which in _EVENTS
    ),
)

DOWNGRADE = (
    *(f"DROP TRIGGER {table}_version_{event} ON {table}" for table in _TABLES for event, _ in _EVENTS),
    "DROP FUNCTION knowledge_versions_bump()",
    "DROP TABLE knowledge_versions",
)


def upgrade() -> None:
    # No write may slip between the backfill and the triggers.
    op.execute("LOCK TABLE articles, article_chunks IN SHARE ROW EXCLUSIVE MODE")
    for statement in UPGRADE:
        op.execute(statement)


def downgrade() -> None:
    for statement in DOWNGRADE:
        op.execute(statement)
