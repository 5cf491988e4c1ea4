"""Counts kept by triggers, so that a capped write is one statement instead of a lock, a count and an
insert (issue #17):

- `memory_live_counts`: live long-term memories per (tenant, subject). The quota check reads one row
  instead of counting the subject's rows, and that row's lock serialises the subject's quota-checked
  writes (the advisory lock it replaces).
- `session_turn_counts`: turns and content bytes per session, expired-but-unpruned turns included (the
  prune's DELETE takes them off). An upper bound of the live figures: a turn under both caps by it is
  under them for certain; one that is not is checked exactly (see cairn_memory.store).

Every writer is counted, whatever path it takes (the service, promotion, a bulk COPY), because the
triggers do the counting, not the callers.

Revision ID: 0013
Revises: 0012
"""

from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

# Inserts: one upsert per statement over its transition table (a bulk COPY costs one statement, not one
# per row). Supersede and delete: row triggers, filtered by WHEN so the embedder's and the recall bump's
# frequent UPDATEs never run them (a transition table cannot be combined with `UPDATE OF column`).
UPGRADE = (
    """
CREATE TABLE memory_live_counts (
    tenant_id uuid NOT NULL,
    subject_id varchar(200) NOT NULL,
    live bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id, subject_id)
)""",
    """
CREATE FUNCTION memory_live_counts_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO memory_live_counts AS c (tenant_id, subject_id, live)
    SELECT tenant_id, subject_id, count(*) FROM inserted_rows WHERE superseded_by IS NULL
    GROUP BY tenant_id, subject_id
    ON CONFLICT (tenant_id, subject_id) DO UPDATE SET live = c.live + EXCLUDED.live;
    RETURN NULL;
END $$""",
    """
CREATE FUNCTION memory_live_counts_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        UPDATE memory_live_counts SET live = live - 1
        WHERE tenant_id = OLD.tenant_id AND subject_id = OLD.subject_id;
        RETURN OLD;
    END IF;
    INSERT INTO memory_live_counts AS c (tenant_id, subject_id, live)
    VALUES (NEW.tenant_id, NEW.subject_id, CASE WHEN NEW.superseded_by IS NULL THEN 1 ELSE -1 END)
    ON CONFLICT (tenant_id, subject_id) DO UPDATE SET live = c.live + EXCLUDED.live;
    RETURN NEW;
END $$""",
    "CREATE TRIGGER memory_live_counts_insert AFTER INSERT ON memories"
    " REFERENCING NEW TABLE AS inserted_rows"
    " FOR EACH STATEMENT EXECUTE FUNCTION memory_live_counts_inserted()",
    "CREATE TRIGGER memory_live_counts_delete AFTER DELETE ON memories"
    " FOR EACH ROW WHEN (OLD.superseded_by IS NULL) EXECUTE FUNCTION memory_live_counts_changed()",
    "CREATE TRIGGER memory_live_counts_supersede AFTER UPDATE OF superseded_by ON memories"
    " FOR EACH ROW WHEN ((OLD.superseded_by IS NULL) <> (NEW.superseded_by IS NULL))"
    " EXECUTE FUNCTION memory_live_counts_changed()",
    """
CREATE TABLE session_turn_counts (
    tenant_id uuid NOT NULL,
    subject_id varchar(200) NOT NULL,
    session_id varchar(400) NOT NULL,
    turns bigint NOT NULL DEFAULT 0,
    bytes bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id, subject_id, session_id)
)""",
    """
CREATE FUNCTION session_turn_counts_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO session_turn_counts AS c (tenant_id, subject_id, session_id, turns, bytes)
    SELECT tenant_id, subject_id, session_id, count(*), sum(octet_length(content)) FROM inserted_rows
    GROUP BY tenant_id, subject_id, session_id
    ON CONFLICT (tenant_id, subject_id, session_id)
    DO UPDATE SET turns = c.turns + EXCLUDED.turns, bytes = c.bytes + EXCLUDED.bytes;
    RETURN NULL;
END $$""",
    """
CREATE FUNCTION session_turn_counts_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE session_turn_counts c SET turns = c.turns - d.turns, bytes = c.bytes - d.bytes
    FROM (SELECT tenant_id, subject_id, session_id, count(*) AS turns, sum(octet_length(content)) AS bytes
          FROM deleted_rows GROUP BY tenant_id, subject_id, session_id) d
    WHERE c.tenant_id = d.tenant_id AND c.subject_id = d.subject_id AND c.session_id = d.session_id;
    RETURN NULL;
END $$""",
    "CREATE TRIGGER session_turn_counts_insert AFTER INSERT ON session_memories"
    " REFERENCING NEW TABLE AS inserted_rows"
    " FOR EACH STATEMENT EXECUTE FUNCTION session_turn_counts_inserted()",
    "CREATE TRIGGER session_turn_counts_delete AFTER DELETE ON session_memories"
    " REFERENCING OLD TABLE AS deleted_rows"
    " FOR EACH STATEMENT EXECUTE FUNCTION session_turn_counts_deleted()",
)

DOWNGRADE = (
    "DROP TRIGGER session_turn_counts_delete ON session_memories",
    "DROP TRIGGER session_turn_counts_insert ON session_memories",
    "DROP FUNCTION session_turn_counts_deleted()",
    "DROP FUNCTION session_turn_counts_inserted()",
    "DROP TABLE session_turn_counts",
    "DROP TRIGGER memory_live_counts_supersede ON memories",
    "DROP TRIGGER memory_live_counts_delete ON memories",
    "DROP TRIGGER memory_live_counts_insert ON memories",
    "DROP FUNCTION memory_live_counts_changed()",
    "DROP FUNCTION memory_live_counts_inserted()",
    "DROP TABLE memory_live_counts",
)


def upgrade() -> None:
    # No write may slip between the backfill and the triggers: hold writers off for the migration.
    op.execute("LOCK TABLE memories, session_memories IN SHARE ROW EXCLUSIVE MODE")
    for statement in UPGRADE:
        op.execute(statement)
    op.execute(
        "INSERT INTO memory_live_counts (tenant_id, subject_id, live) "
        "SELECT tenant_id, subject_id, count(*) FROM memories WHERE superseded_by IS NULL "
        "GROUP BY tenant_id, subject_id"
    )
    op.execute(
        "INSERT INTO session_turn_counts (tenant_id, subject_id, session_id, turns, bytes) "
        "SELECT tenant_id, subject_id, session_id, count(*), sum(octet_length(content)) "
        "FROM session_memories GROUP BY tenant_id, subject_id, session_id"
    )


def downgrade() -> None:
    for statement in DOWNGRADE:
        op.execute(statement)
