"""The knowledge service's per-replica vector copy against the real database: the triggers of migration 0016
move a tenant's version on every write (and only its own), and the copy ranks exactly as the SQL scan it
replaces, visibility, partitions and chunks included."""

import hashlib
import uuid
from typing import Any

import asyncpg
import numpy as np
import pytest

from cairn_contracts.identity import Role
from cairn_devstack.cairn import CairnStack
from cairn_knowledge.search_store import SearchStore
from cairn_knowledge.vector_cache import TenantVectors
from cairn_scope import Scope
from cairn_storage import create_engine, make_sessionmaker
from cairn_storage.models import EMBEDDING_DIM
from cairn_storage.vector_search import vector_literal
from conftest import TenantHandle

ARTICLES = 300
SUBJECTS = ("alice", "bob")


def article(
    tenant: str, vector: np.ndarray, i: int, *, owner: str | None, project: uuid.UUID | None, status: str
) -> dict[str, Any]:
    body = f"article {i}"
    return {
        "id": uuid.uuid4(),
        "tenant": uuid.UUID(tenant),
        "title": f"title {i}",
        "body": body,
        "status": status,
        "visibility": "owner" if owner else "tenant",
        "owner": owner,
        "project": project,
        "hash": hashlib.sha256(body.encode()).hexdigest(),
        "vector": vector_literal(vector.tolist()),
    }


INSERT = """
INSERT INTO articles (id, tenant_id, title, body, status, visibility, owner_subject_id, project_id,
                      proposer_subject_id, source, content_hash, embedding, embedding_content_hash)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'seed', 'agent', $9, CAST($10 AS vector), $9)
"""


NOISE = 1e-5  # float32 sums in another order (numpy's kernels vs pgvector's loop) differ by about 1e-7


def assert_same_ranking(copy: list[tuple[uuid.UUID, float]], sql: list[tuple[uuid.UUID, float]]) -> None:
    """The same distances at every rank, and the same article wherever its distance is not within float
    noise of a neighbour's (only such near-ties may come out in either order)."""
    assert len(copy) == len(sql)
    assert [d for _, d in copy] == pytest.approx([d for _, d in sql], abs=NOISE)
    for i, ((mine, d), (theirs, _)) in enumerate(zip(copy, sql, strict=True)):
        near_tie = any(abs(d - sql[j][1]) < 10 * NOISE for j in (i - 1, i + 1) if 0 <= j < len(sql))
        if not near_tie:
            assert mine == theirs, f"rank {i + 1}"
    cut = sql[-1][1] - 10 * NOISE
    assert {a for a, d in copy if d < cut} == {a for a, d in sql if d < cut}


async def version(conn: asyncpg.Connection, tenant: str) -> int:
    return int(
        await conn.fetchval(
            "SELECT coalesce(max(version), 0) FROM knowledge_versions WHERE tenant_id = $1", uuid.UUID(tenant)
        )
    )


async def insert(conn: asyncpg.Connection, rows: list[dict[str, Any]]) -> None:
    await conn.executemany(
        INSERT,
        [
            (
                r["id"],
                r["tenant"],
                r["title"],
                r["body"],
                r["status"],
                r["visibility"],
                r["owner"],
                r["project"],
                r["hash"],
                r["vector"],
            )
            for r in rows
        ],
    )


async def test_every_write_to_a_tenants_articles_moves_only_its_version(
    stack: CairnStack, new_tenant: Any
) -> None:
    mine, other = (await new_tenant()).id, (await new_tenant()).id
    rng = np.random.default_rng(1)
    conn = await asyncpg.connect(stack.database_url)
    try:
        assert await version(conn, mine) == 0
        rows = [
            article(mine, rng.normal(size=EMBEDDING_DIM), i, owner=None, project=None, status="published")
            for i in range(3)
        ]
        await insert(conn, rows)  # one statement per row: executemany
        after_insert = await version(conn, mine)
        assert after_insert >= 1
        other_before = await version(conn, other)
        await conn.execute(
            "INSERT INTO article_chunks (article_id, chunk_index, tenant_id, embedding) VALUES ($1, 1, $2, CAST($3 AS vector))",
            rows[0]["id"],
            uuid.UUID(mine),
            rows[0]["vector"],
        )
        after_chunk = await version(conn, mine)
        assert after_chunk > after_insert
        await conn.execute("UPDATE articles SET status = 'draft' WHERE id = $1", rows[1]["id"])
        after_update = await version(conn, mine)
        assert after_update > after_chunk
        await conn.execute("DELETE FROM articles WHERE id = $1", rows[0]["id"])  # its chunk cascades too
        assert await version(conn, mine) > after_update
        assert await version(conn, other) == other_before  # another tenant's writes never move it
    finally:
        await conn.close()


@pytest.mark.parametrize("project_filter", [False, True])
async def test_the_copy_ranks_exactly_as_the_sql_scan(
    stack: CairnStack, tenant: TenantHandle, project_filter: bool
) -> None:
    rng = np.random.default_rng(11)
    project = uuid.uuid4()
    vectors = rng.normal(size=(ARTICLES, EMBEDDING_DIM)).astype(np.float32)
    rows = [
        article(
            tenant.id,
            vectors[i],
            i,
            owner=SUBJECTS[i % 2] if i % 5 == 0 else None,
            project=project if i % 7 == 0 else None,
            status="draft" if i % 11 == 0 else "published",
        )
        for i in range(ARTICLES)
    ]
    conn = await asyncpg.connect(stack.database_url)
    try:
        await insert(conn, rows)
        for r in rows[:20]:  # a second chunk for some: an article is ranked by its best vector
            await conn.execute(
                "INSERT INTO article_chunks (article_id, chunk_index, tenant_id, embedding) VALUES ($1, 1, $2, CAST($3 AS vector))",
                r["id"],
                uuid.UUID(tenant.id),
                vector_literal(rng.normal(size=EMBEDDING_DIM).tolist()),
            )
    finally:
        await conn.close()
    engine = create_engine(stack.database_url, pool_size=1).execution_options(cairn_maintenance="test")
    try:
        async with make_sessionmaker(engine)() as session:
            store = SearchStore(session)
            copy = TenantVectors.build(
                await store.knowledge_version(tenant.id), await store.vector_rows(tenant.id), EMBEDDING_DIM
            )
            for subject in (*SUBJECTS, "carol"):
                scope = Scope(tenant_id=tenant.id, subject_id=subject, role=Role.agent, key_id="test")
                for _ in range(5):
                    query = rng.normal(size=EMBEDDING_DIM).tolist()
                    partition = str(project) if project_filter else None
                    in_sql = await store.semantic(scope, query, 25, partition, ann=False, pool=25)
                    in_copy = copy.nearest(subject, project if project_filter else None, query, 25)
                    assert_same_ranking(in_copy, [(r.id, r.value) for r in in_sql])
    finally:
        await engine.dispose()
