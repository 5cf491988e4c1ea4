"""Recall counters in their own narrow table, `memory_recalls`, so that counting a recall rewrites no memory.

Until now every recall event's bump was an UPDATE of the memory row itself (`recall_count`,
`last_recalled_at`). `recall_count` sat in the graduation sweep's index, and a memory row (its inline
384-dimension vector alone is 1.5 KB) rarely finds room on its page, so the bump was never a HOT update:
each bumped memory was written again into every index of `memories`, both HNSW graphs (the table's and a
large subject's own) and both full-text GIN indexes among them. On a 10,000-memory subject that was about
2.3 ms of PostgreSQL per memory bumped, some 23 ms per recall event of fresh memories, against 0.6 ms for
the recall itself, and it left dead entries in the vector graphs (docs/performance.md, twentieth round).

`memory_recalls(memory_id, tenant_id, subject_id, recall_count, last_recalled_at, settled)` holds a row per
memory recalled at least once. The bump is an upsert of a 70-byte row (its key and the sweep's index).
The memory's own row is only read, and only to check that the event's ids belong to its subject.

`settled` is true once the memory is superseded or graduated, kept by a row trigger on those two columns of
`memories` (whoever writes them), so the sweep's partial index holds only memories that can still graduate.
Rows cascade with their memory. The same row-level-security policy as `memories` binds the table.

Revision ID: 0020
Revises: 0019
"""

import importlib.util
from pathlib import Path
from typing import Any

from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None

_SETTLE = """
CREATE FUNCTION memory_recalls_settle() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE memory_recalls SET settled = (NEW.superseded_by IS NOT NULL OR NEW.graduated_at IS NOT NULL)
    WHERE memory_id = NEW.id;
    RETURN NULL;
END $$"""


def _sibling(file_name: str) -> Any:
    """Another migration's module, for its SQL as that migration wrote it (migrations are not a package)."""
    spec = importlib.util.spec_from_file_location(
        f"cairn_migration_{file_name[:4]}", Path(__file__).with_name(file_name)
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _remember_batch() -> str:
    """Migration 0017's batch insert function, which named `recall_count`."""
    batch = str(_sibling("0017_write_batch_functions.py").REMEMBER_BATCH)
    return batch.replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1)


def upgrade() -> None:
    op.execute(
        """
CREATE TABLE memory_recalls (
    memory_id uuid PRIMARY KEY REFERENCES memories (id) ON DELETE CASCADE,
    tenant_id uuid NOT NULL,
    subject_id varchar(200) NOT NULL,
    recall_count integer NOT NULL,
    last_recalled_at timestamptz NOT NULL,
    settled boolean NOT NULL DEFAULT false
)"""
    )
    op.execute(
        """
INSERT INTO memory_recalls (memory_id, tenant_id, subject_id, recall_count, last_recalled_at, settled)
SELECT id, tenant_id, subject_id, recall_count, coalesce(last_recalled_at, created_at),
       superseded_by IS NOT NULL OR graduated_at IS NOT NULL
FROM memories WHERE recall_count > 0 OR last_recalled_at IS NOT NULL"""
    )
    # The sweep's candidate scan: one tenant's memories that can still graduate, hottest first.
    op.execute(
        "CREATE INDEX memory_recalls_candidates_idx ON memory_recalls (tenant_id, recall_count DESC, memory_id)"
        " WHERE NOT settled"
    )
    op.execute(_SETTLE)
    op.execute(
        "CREATE TRIGGER memory_recalls_settled AFTER UPDATE OF superseded_by, graduated_at ON memories"
        " FOR EACH ROW WHEN (OLD.superseded_by IS DISTINCT FROM NEW.superseded_by"
        " OR OLD.graduated_at IS DISTINCT FROM NEW.graduated_at) EXECUTE FUNCTION memory_recalls_settle()"
    )
    op.execute("ALTER TABLE memory_recalls ENABLE ROW LEVEL SECURITY")
    op.execute("ALTER TABLE memory_recalls FORCE ROW LEVEL SECURITY")
    policy = _sibling("0014_row_level_security.py")._ALLOWED  # the policy of `memories`
    op.execute(f"CREATE POLICY memory_recalls_scope ON memory_recalls USING ({policy}) WITH CHECK ({policy})")
    op.execute("DROP INDEX memories_graduation_candidates_idx")
    remember = (
        _remember_batch().replace("metadata, recall_count", "metadata").replace("w.metadata, 0", "w.metadata")
    )
    assert "recall_count" not in remember, "migration 0017's insert changed shape"
    op.execute(remember)
    op.execute("ALTER TABLE memories DROP COLUMN recall_count, DROP COLUMN last_recalled_at")


def downgrade() -> None:
    op.execute("ALTER TABLE memories ADD COLUMN recall_count integer NOT NULL DEFAULT 0")
    op.execute("ALTER TABLE memories ADD COLUMN last_recalled_at timestamptz")
    op.execute(
        "UPDATE memories m SET recall_count = r.recall_count, last_recalled_at = r.last_recalled_at"
        " FROM memory_recalls r WHERE r.memory_id = m.id"
    )
    op.execute(_remember_batch())
    op.execute(
        "CREATE INDEX memories_graduation_candidates_idx ON memories (tenant_id, recall_count DESC, id)"
        " WHERE graduated_at IS NULL AND superseded_by IS NULL"
    )
    op.execute("DROP TRIGGER memory_recalls_settled ON memories")
    op.execute("DROP FUNCTION memory_recalls_settle()")
    op.execute("DROP TABLE memory_recalls")
