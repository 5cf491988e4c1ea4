"""The ANN recall statement is served by the partial HNSW index (read from EXPLAIN on real rows).

`bench/recall_scale.py` prints the same plan at 200k rows, where the planner picks HNSW unaided."""

import uuid
from collections.abc import Callable

import numpy as np
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from cairn_contracts.identity import Role
from cairn_devstack.cairn import CairnStack
from cairn_recall.service import subject_ann_options
from cairn_recall.settings import RecallSettings
from cairn_recall.store import RecallStore
from cairn_recall.subject_index import SubjectIndexes, index_names
from cairn_scope import Scope, generate_signing_key
from cairn_storage import create_engine, make_sessionmaker
from cairn_storage.explain import Explain
from cairn_storage.vector_search import IterativeScan

ROWS = 1000
SUBJECTS = 30


async def insert_rows(
    conn: AsyncConnection, tenant: str, vectors: np.ndarray, subject_of: Callable[[int], str]
) -> None:
    """Embedded rows `row <i>` straight into PostgreSQL (no embedding worker involved)."""
    await conn.execute(
        text(
            "INSERT INTO memories (id, tenant_id, subject_id, text, embedding, embedding_content_hash) "
            "VALUES (:id, :t, :s, :text, CAST(:v AS vector), 'h')"
        ),
        [
            {
                "id": uuid.uuid4(),
                "t": uuid.UUID(tenant),
                "s": subject_of(i),
                "text": f"row {i}",
                "v": str(vectors[i].tolist()),
            }
            for i in range(len(vectors))
        ],
    )


def low_rank_unit_vectors(rng: np.random.Generator, rows: int, rank: int = 8) -> np.ndarray:
    """Unit 384-d vectors spanning a `rank`-dimensional subspace. Text embeddings have a low intrinsic
    dimension and HNSW finds their neighbours; isotropic random 384-d vectors are its worst case (every
    distance ~1, no slope to walk down), and in the tenant-wide graph shared with every other test's rows the
    walk missed a needle's own row (CI, 2026-12-04: best distance 0.89 instead of 0)."""
    basis, _ = np.linalg.qr(rng.normal(size=(384, rank)))
    vectors = rng.normal(size=(rows, rank)) @ basis.T
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


async def test_ann_statement_uses_the_hnsw_index(stack: CairnStack) -> None:
    tenant = str(uuid.uuid4())
    vectors = low_rank_unit_vectors(np.random.default_rng(7), ROWS)
    engine = create_engine(stack.database_url, pool_size=1).execution_options(cairn_maintenance="test_seed")
    try:
        async with engine.begin() as conn:
            await insert_rows(conn, tenant, vectors, lambda i: f"s{i % SUBJECTS}")
            await conn.execute(text("ANALYZE memories"))
        scope = Scope(tenant_id=tenant, subject_id="s3", role=Role.agent, key_id="test")
        async with make_sessionmaker(engine).begin() as session:
            store = RecallStore(session)
            # The production options (RecallSettings: ef_search 400, 50,000 scan tuples, memory multiplier 8):
            # the tenant-wide graph is shared with every other test's rows, and at pgvector's defaults the
            # filtered walk could stop before reaching this subject's needle (seen once in CI).
            await store.set_ann_options(400, "relaxed_order", 50_000, 8.0)
            # On a table this small scan-and-sort is honestly cheaper than the graph, so take sorting away:
            # the plan must then be an HNSW-ordered scan. That still fails if the statement stops being
            # servable by the partial index (superseded filter dropped, another operator or opclass, an
            # ORDER BY the index cannot provide). At 200k rows bench/recall_scale.py shows the planner
            # choosing HNSW unaided.
            await session.execute(text("SET LOCAL enable_sort = off"))
            stmt = store.ann_statement(scope, vectors[3].tolist(), limit=10, pool=200, project_id=None)
            plan = "\n".join(r[0] for r in await session.execute(Explain(stmt)))
            assert "memories_live_embedding_hnsw_idx" in plan, plan
            found = await store.ann(scope, vectors[3].tolist(), limit=10, pool=200, project_id=None)
        assert found, "the needle's own row must come back"
        assert found[0].value < 1e-5  # row 3 belongs to s3 and is its own nearest neighbour
    finally:
        async with engine.begin() as conn:
            await conn.execute(text("DELETE FROM memories WHERE tenant_id = :t"), {"t": uuid.UUID(tenant)})
        await engine.dispose()


async def test_a_subjects_own_indexes_serve_its_recall_and_nobody_elses(stack: CairnStack) -> None:
    """After `SubjectIndexes.build`, the subject's ANN statements (heads and chunks) are planned onto its own
    partial HNSW indexes, and another subject's identical statement still takes the tenant-wide one."""
    tenant = str(uuid.uuid4())
    rng = np.random.default_rng(11)
    vectors = rng.normal(size=(ROWS, 384))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    engine = create_engine(stack.database_url, pool_size=2).execution_options(cairn_maintenance="test_seed")
    big = Scope(tenant_id=tenant, subject_id="big's", role=Role.agent, key_id="test")  # a quote, on purpose
    small = Scope(tenant_id=tenant, subject_id="small", role=Role.agent, key_id="test")
    indexes = SubjectIndexes(engine, min_rows=100, max_indexes=10)
    try:
        async with engine.begin() as conn:
            await insert_rows(conn, tenant, vectors, lambda i: big.subject_id if i % 2 else small.subject_id)
            await conn.execute(text("ANALYZE memories"))
        assert not await indexes.ready(big)
        await indexes.build(big)
        assert await indexes.ready(big)
        assert not await indexes.ready(small)
        names = index_names(big)
        async with make_sessionmaker(engine).begin() as session:
            store = RecallStore(session)
            await store.plan_with_constants()
            await store.set_ann_options(100, "relaxed_order")
            await session.execute(text("SET LOCAL enable_sort = off"))
            own = (names["mh"], names["ch"])
            shared = ("memories_live_embedding_hnsw_idx", "memory_chunks_embedding_hnsw_idx")
            for scope, expected in ((big, own), (small, shared)):
                # One statement: the heads' scan and the chunks' scan each on the index meant for them.
                stmt = store.ann_statement(scope, vectors[1].tolist(), limit=10, pool=100, project_id=None)
                plan = "\n".join(r[0] for r in await session.execute(Explain(stmt)))
                assert all(name in plan for name in expected), plan
            found = await store.ann(big, vectors[1].tolist(), limit=10, pool=100, project_id=None)
        assert found[0].value < 1e-5  # row 1 is the big subject's and its own nearest neighbour
        # Exact kNN over the subject's rows agrees with its own graph.
        own = [i for i in range(ROWS) if i % 2]
        exact = sorted(own, key=lambda i: -float(vectors[i] @ vectors[1]))[:10]
        async with engine.connect() as conn:
            ids = [
                r.id
                for r in await conn.execute(
                    text("SELECT id FROM memories WHERE tenant_id = :t AND text = ANY(:texts)"),
                    {"t": uuid.UUID(tenant), "texts": [f"row {i}" for i in exact]},
                )
            ]
        assert {f.id for f in found} == set(ids)
        # Recall's subject-ANN pool: the same options as connection settings, one AUTOCOMMIT statement.
        options = subject_ann_options(
            RecallSettings(scope_verify_keys=generate_signing_key("gateway.test")[1]),
            IterativeScan("relaxed_order", "applied"),
        )
        ann_engine = create_engine(stack.database_url, pool_size=1, server_settings=options)
        try:
            pooled = ann_engine.execution_options(cairn_maintenance="test_seed", isolation_level="AUTOCOMMIT")
            async with make_sessionmaker(pooled)() as session:
                store = RecallStore(session)
                stmt = store.ann_statement(big, vectors[1].tolist(), limit=10, pool=100, project_id=None)
                plan = "\n".join(r[0] for r in await session.execute(Explain(stmt)))
                assert names["mh"] in plan, plan
                assert names["ch"] in plan, plan
                again = await store.ann(big, vectors[1].tolist(), limit=10, pool=100, project_id=None)
            assert {f.id for f in again} == set(ids)
        finally:
            await ann_engine.dispose()
    finally:
        async with engine.connect() as conn:
            conn = await conn.execution_options(isolation_level="AUTOCOMMIT")
            for name in index_names(big).values():
                await conn.execute(text(f'DROP INDEX CONCURRENTLY IF EXISTS "{name}"'))
            await conn.execute(text("DELETE FROM memories WHERE tenant_id = :t"), {"t": uuid.UUID(tenant)})
        await engine.dispose()
