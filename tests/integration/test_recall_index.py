"""The ANN recall statement is served by the partial HNSW index (read from EXPLAIN on real rows).

`bench/recall_scale.py` prints the same plan at 200k rows, where the planner picks HNSW unaided."""

import uuid

import numpy as np
from sqlalchemy import text

from cairn_contracts.identity import Role
from cairn_devstack.cairn import CairnStack
from cairn_recall.store import RecallStore
from cairn_scope import Scope
from cairn_storage import create_engine, make_sessionmaker
from cairn_storage.explain import Explain

ROWS = 1000
SUBJECTS = 30


async def test_ann_statement_uses_the_hnsw_index(stack: CairnStack) -> None:
    tenant = str(uuid.uuid4())
    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(ROWS, 384))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    engine = create_engine(stack.database_url, pool_size=1)
    try:
        async with engine.begin() as conn:
            await conn.execute(
                text(
                    "INSERT INTO memories (id, tenant_id, subject_id, text, embedding, embedding_content_hash) "
                    "VALUES (:id, :t, :s, :text, CAST(:v AS vector), 'h')"
                ),
                [
                    {
                        "id": uuid.uuid4(),
                        "t": uuid.UUID(tenant),
                        "s": f"s{i % SUBJECTS}",
                        "text": f"row {i}",
                        "v": str(vectors[i].tolist()),
                    }
                    for i in range(ROWS)
                ],
            )
            await conn.execute(text("ANALYZE memories"))
        scope = Scope(tenant_id=tenant, subject_id="s3", role=Role.agent, key_id="test")
        async with make_sessionmaker(engine).begin() as session:
            store = RecallStore(session)
            await store.set_ann_options(200, "relaxed_order")
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
