"""Recall's per-replica copy of a large subject's vectors against the real database: the triggers of
migration 0018 move a subject's version on every write that can change its vector search (and only its
own; not a plain write, not recall's bump), and the copy ranks exactly as the SQL exact statement."""

import json
import uuid
from typing import Any

import asyncpg
import numpy as np
import pytest

from cairn_contracts.identity import Role
from cairn_devstack.cairn import CairnStack
from cairn_recall.store import HotReads, RecallStore
from cairn_recall.vector_copy import SubjectVectors
from cairn_scope import Scope
from cairn_storage import create_engine, make_sessionmaker
from cairn_storage.models import EMBEDDING_DIM
from cairn_storage.scoped_pool import ScopedReads
from cairn_storage.vector_search import vector_literal
from conftest import TenantHandle
from tests.integration.test_knowledge_vector_cache import assert_same_ranking

INSERT = """
INSERT INTO memories (id, tenant_id, subject_id, project_id, text, confidence, source, tags, metadata,
                      embedding)
VALUES ($1, $2, $3, $4, $5, 1.0, 'explicit', '{}', $6::jsonb, CAST($7 AS vector))
"""
CHUNK = (
    "INSERT INTO memory_chunks (memory_id, chunk_index, tenant_id, subject_id, embedding)"
    " VALUES ($1, $2, $3, $4, CAST($5 AS vector))"
)


async def version(conn: asyncpg.Connection, tenant: str, subject: str) -> int:
    return int(
        await conn.fetchval(
            "SELECT coalesce(max(version), 0) FROM memory_versions WHERE tenant_id = $1 AND subject_id = $2",
            uuid.UUID(tenant),
            subject,
        )
    )


def vector(rng: np.random.Generator) -> str:
    return vector_literal(rng.normal(size=EMBEDDING_DIM).tolist())


async def insert(
    conn: asyncpg.Connection,
    tenant: str,
    subject: str,
    text: str,
    embedding: str | None,
    *,
    project: uuid.UUID | None = None,
    role: str | None = None,
) -> uuid.UUID:
    memory_id = uuid.uuid4()
    metadata = json.dumps({"role": role} if role else {})
    await conn.execute(INSERT, memory_id, uuid.UUID(tenant), subject, project, text, metadata, embedding)
    return memory_id


async def test_only_writes_that_change_a_subjects_vector_search_move_its_version(
    stack: CairnStack, new_tenant: Any
) -> None:
    tenant, other = (await new_tenant()).id, (await new_tenant()).id
    rng = np.random.default_rng(3)
    conn = await asyncpg.connect(stack.database_url)
    try:
        other_id = await insert(conn, other, "s", "elsewhere", vector(rng))
        other_before = await version(conn, other, "s")
        plain = await insert(conn, tenant, "s", "a new memory, no vector yet", None)
        assert await version(conn, tenant, "s") == 0  # a plain write: nothing to search by vector yet
        await conn.execute(
            "UPDATE memories SET embedding = CAST($2 AS vector) WHERE id = $1", plain, vector(rng)
        )
        embedded = await version(conn, tenant, "s")
        assert embedded >= 1
        await conn.execute(
            "INSERT INTO memory_recalls (memory_id, tenant_id, subject_id, recall_count, last_recalled_at)"
            " SELECT id, tenant_id, subject_id, 1, now() FROM memories WHERE id = $1",
            plain,
        )
        assert await version(conn, tenant, "s") == embedded  # recall's own bump
        with_vector = await insert(conn, tenant, "s", "written with its vector", vector(rng))
        inserted = await version(conn, tenant, "s")
        assert inserted > embedded
        await conn.execute(CHUNK, with_vector, 1, uuid.UUID(tenant), "s", vector(rng))
        chunked = await version(conn, tenant, "s")
        assert chunked > inserted
        await conn.execute("UPDATE memories SET superseded_by = $2 WHERE id = $1", with_vector, plain)
        superseded = await version(conn, tenant, "s")
        assert superseded > chunked
        await conn.execute("DELETE FROM memories WHERE id = $1", with_vector)  # its chunk cascades too
        assert await version(conn, tenant, "s") > superseded
        assert await version(conn, tenant, "t") == 0  # another subject of the tenant
        assert await version(conn, other, "s") == other_before  # another tenant
        assert other_id is not None
    finally:
        await conn.close()


@pytest.mark.parametrize("project_filter", [False, True])
async def test_the_copy_ranks_exactly_as_the_sql_exact_statement(
    stack: CairnStack, tenant: TenantHandle, project_filter: bool
) -> None:
    rng = np.random.default_rng(17)
    project = uuid.uuid4()
    conn = await asyncpg.connect(stack.database_url)
    try:
        ids = []
        for i in range(300):
            embedding = None if i % 23 == 0 else vector(rng)  # not embedded yet: in neither
            role = "assistant" if i % 3 == 0 else "user"
            ids.append(
                await insert(
                    conn,
                    tenant.id,
                    "big",
                    f"turn {i}",
                    embedding,
                    project=project if i % 7 == 0 else None,
                    role=role,
                )
            )
            await insert(conn, tenant.id, "neighbour", f"neighbour {i}", vector(rng))  # never in the copy
        for memory_id in ids[1:40]:  # chunks: a memory is ranked by its best vector
            for index in (1, 2):
                await conn.execute(CHUNK, memory_id, index, uuid.UUID(tenant.id), "big", vector(rng))
        for memory_id in ids[40:60]:  # superseded: in neither
            await conn.execute("UPDATE memories SET superseded_by = $2 WHERE id = $1", memory_id, ids[0])
    finally:
        await conn.close()
    engine = create_engine(stack.database_url, pool_size=1).execution_options(cairn_maintenance="test")
    # The exact statement as recall runs it: the services' login, held to the scope by row-level security.
    reads = await ScopedReads.open(stack.service_database_url, size=1)
    hot = HotReads(reads)
    scope = Scope(tenant_id=tenant.id, subject_id="big", role=Role.agent, key_id="test")
    try:
        async with make_sessionmaker(engine)() as session:
            store = RecallStore(session)
            rows = await store.subject_vectors(scope)
            assert await store.subject_vectors_at_most(scope, 10) == 22  # each kind counted up to cap + 1
            copy = SubjectVectors.build(await store.vector_version(scope), rows, EMBEDDING_DIM)
            # Heads: 300, less 14 not embedded and 20 superseded (one is both); chunks: 39 live memories x 2.
            assert copy.rows == 300 - 14 - 20 + 1 + 39 * 2
            partition = str(project) if project_filter else None
            for _ in range(6):
                query = rng.normal(size=EMBEDDING_DIM).tolist()
                in_sql = await hot.exact(scope, query, 30, partition, include_superseded=False)
                in_copy = copy.nearest(project if project_filter else None, query, 30)
                assert_same_ranking([(r.id, r.value) for r in in_copy], [(r.id, r.value) for r in in_sql])
                # The recall path: the int8 product's bounds, then float32 rows for the memories they keep.
                batched, similarities = await copy.nearest_batched(
                    project if project_filter else None, query, 30
                )
                assert_same_ranking([(r.id, r.value) for r in batched], [(r.id, r.value) for r in in_sql])
                assert [similarities.of(r.id) for r in in_sql] == pytest.approx(
                    [1 - r.value for r in in_sql], abs=1e-5
                )
                assert [r.speaker for r in in_copy if r.id in {s.id for s in in_sql}] == [
                    s.speaker for s in in_sql if s.id in {r.id for r in in_copy}
                ]
    finally:
        await engine.dispose()
        await reads.close()
