"""A counter of changes to each subject's live set, kept by the live-count triggers (issue #17):

`memory_live_counts.changes` moves whenever the subject's live count does: a live memory inserted (its
vector or not), deleted, superseded or un-superseded. With `memory_versions.version` (which moves on text,
partition and vector changes, migration 0018) it versions everything the keyword side of recall reads: a
recall replica keeps a copy of a large subject's postings (cairn_recall.keyword_copy) and uses it only
while `version + changes` is what it loaded. Both counters only grow, so their sum moves on every change.

The counter rides in the row the live-count triggers already update (and the quota check already locks),
so it costs a write nothing more than one more column in the same UPDATE.

Revision ID: 0019
Revises: 0018
"""

from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def _functions(changes: bool) -> tuple[str, str]:
    """The two live-count trigger functions of migration 0013, bumping `changes` too when `changes`."""
    bump = ", changes = c.changes + 1" if changes else ""
    bump_plain = ", changes = changes + 1" if changes else ""
    column, first = (", changes", ", 1") if changes else ("", "")
    inserted = f"""
CREATE OR REPLACE FUNCTION memory_live_counts_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO memory_live_counts AS c (tenant_id, subject_id, live{column})
    SELECT tenant_id, subject_id, count(*){first} FROM inserted_rows WHERE superseded_by IS NULL
    GROUP BY tenant_id, subject_id
    ON CONFLICT (tenant_id, subject_id) DO UPDATE SET live = c.live + EXCLUDED.live{bump};
    RETURN NULL;
END $$"""
    changed = f"""
CREATE OR REPLACE FUNCTION memory_live_counts_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        UPDATE memory_live_counts SET live = live - 1{bump_plain}
        WHERE tenant_id = OLD.tenant_id AND subject_id = OLD.subject_id;
        RETURN OLD;
    END IF;
    INSERT INTO memory_live_counts AS c (tenant_id, subject_id, live{column})
    VALUES (NEW.tenant_id, NEW.subject_id, CASE WHEN NEW.superseded_by IS NULL THEN 1 ELSE -1 END{first})
    ON CONFLICT (tenant_id, subject_id) DO UPDATE SET live = c.live + EXCLUDED.live{bump};
    RETURN NEW;
END $$"""
    return inserted, changed


def upgrade() -> None:
    op.execute("ALTER TABLE memory_live_counts ADD COLUMN changes bigint NOT NULL DEFAULT 0")
    for statement in _functions(changes=True):
        op.execute(statement)


def downgrade() -> None:
    for statement in _functions(changes=False):
        op.execute(statement)
    op.execute("ALTER TABLE memory_live_counts DROP COLUMN changes")
