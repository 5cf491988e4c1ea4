"""Article and chunk vectors are stored inline (storage MAIN instead of pgvector's EXTERNAL), so an exact
scan over a tenant's articles reads heap pages only: with out-of-line vectors each row cost three TOAST
buffer reads, and the exact top-k over 10,000 articles took 40 ms instead of about 8 ms
(bench/knowledge_search.py). A 384-dim vector (1.5 KB) fits any row; a long body still goes out of line.
Rows written before this keep their out-of-line vectors until their vector is written again.

Revision ID: 0012
Revises: 0011
"""

from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE articles ALTER COLUMN embedding SET STORAGE MAIN")
    op.execute("ALTER TABLE article_chunks ALTER COLUMN embedding SET STORAGE MAIN")


def downgrade() -> None:
    op.execute("ALTER TABLE articles ALTER COLUMN embedding SET STORAGE EXTERNAL")
    op.execute("ALTER TABLE article_chunks ALTER COLUMN embedding SET STORAGE EXTERNAL")
