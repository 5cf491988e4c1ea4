"""A version per subject's searchable vectors, moved by triggers on every write that can change a vector
search of the subject (issue #17):

`memory_versions(tenant_id, subject_id, version)` is bumped when one of the subject's memories gets or
changes its vector, is superseded or un-superseded, changes partition or text, is deleted, or when one of
its chunk vectors is inserted, changed or deleted, whoever writes them. A recall replica keeps a copy of a
large subject's live vectors in memory (cairn_recall.vector_copy) and serves the subject's semantic side
from it only while the version it loaded is still the subject's version.

A plain write does not move it: a new memory has no vector until the embedding worker's UPDATE, which does.
Recall's own bump (`recall_count`, `last_recalled_at`) names none of the watched columns, so the row trigger
(`UPDATE OF ...`) does not even fire for it. An insert that already carries a vector is caught by a row
trigger whose WHEN skips every other insert without a function call.

No foreign key, as for knowledge_versions: a tenant's deletion cascades into its memories, whose trigger
would otherwise insert a version row that references the tenant being deleted. It holds counters only
(no content), keyed by the scope its reader already holds.

Revision ID: 0018
Revises: 0017
"""

from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None

UPGRADE = (
    """
CREATE TABLE memory_versions (
    tenant_id uuid NOT NULL,
    subject_id text NOT NULL,
    version bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id, subject_id)
)""",
    # Row triggers: one subject per row.
    """
CREATE FUNCTION memory_versions_bump_row() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    changed record;
BEGIN
    IF TG_OP = 'DELETE' THEN changed := OLD; ELSE changed := NEW; END IF;
    INSERT INTO memory_versions AS v (tenant_id, subject_id, version)
    VALUES (changed.tenant_id, changed.subject_id, 1)
    ON CONFLICT (tenant_id, subject_id) DO UPDATE SET version = v.version + 1;
    RETURN NULL;
END $$""",
    # Statement triggers over a transition table: one upsert per statement, subjects in a fixed order (no
    # deadlock between two statements that touch the same subjects).
    """
CREATE FUNCTION memory_versions_bump() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO memory_versions AS v (tenant_id, subject_id, version)
    SELECT DISTINCT tenant_id, subject_id, 1 FROM changed_rows ORDER BY tenant_id, subject_id
    ON CONFLICT (tenant_id, subject_id) DO UPDATE SET version = v.version + 1;
    RETURN NULL;
END $$""",
    "CREATE TRIGGER memory_versions_embedded AFTER UPDATE OF embedding, superseded_by, project_id, text"
    " ON memories FOR EACH ROW EXECUTE FUNCTION memory_versions_bump_row()",
    "CREATE TRIGGER memory_versions_inserted_with_vector AFTER INSERT ON memories"
    " FOR EACH ROW WHEN (NEW.embedding IS NOT NULL) EXECUTE FUNCTION memory_versions_bump_row()",
    "CREATE TRIGGER memory_versions_deleted AFTER DELETE ON memories REFERENCING OLD TABLE AS changed_rows"
    " FOR EACH STATEMENT EXECUTE FUNCTION memory_versions_bump()",
    *(
        f"CREATE TRIGGER memory_chunks_version_{event} AFTER {event.upper()} ON memory_chunks"
        f" REFERENCING {which} TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION memory_versions_bump()"
        for event, which in (("insert", "NEW"), ("update", "NEW"), ("delete", "OLD"))
    ),
)

DOWNGRADE = (
    *(
        f"DROP TRIGGER memory_chunks_version_{event} ON memory_chunks"
        for event in ("insert", "update", "delete")
    ),
    "DROP TRIGGER memory_versions_deleted ON memories",
    "DROP TRIGGER memory_versions_inserted_with_vector ON memories",
    "DROP TRIGGER memory_versions_embedded ON memories",
    "DROP FUNCTION memory_versions_bump()",
    "DROP FUNCTION memory_versions_bump_row()",
    "DROP TABLE memory_versions",
)


def upgrade() -> None:
    for statement in UPGRADE:
        op.execute(statement)


def downgrade() -> None:
    for statement in DOWNGRADE:
        op.execute(statement)
