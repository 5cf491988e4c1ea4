"""A small subject's recall is exact however crowded its table: the exact statement must not take the
tenant-wide HNSW index, whose scan keeps only the nearest `ef_search` rows of every subject and filters
afterwards (a subject whose neighbourhood is crowded by other subjects' rows then got few or none)."""

import uuid

import asyncpg
import numpy as np

from cairn_contracts.identity import Role
from cairn_devstack.cairn import CairnStack
from cairn_recall.store import HotReads
from cairn_scope import Scope
from cairn_storage.models import EMBEDDING_DIM
from cairn_storage.scoped_pool import ScopedReads
from cairn_storage.vector_search import vector_literal
from conftest import TenantHandle
from tests.integration.test_recall_vector_copy import INSERT

CROWD = 3000
OWN = 1500


async def test_a_small_subjects_exact_read_ranks_all_its_rows_in_a_crowded_table(
    stack: CairnStack, tenant: TenantHandle
) -> None:
    rng = np.random.default_rng(11)
    query = rng.normal(size=EMBEDDING_DIM)
    query /= np.linalg.norm(query)
    # The crowd sits right around the query, the subject's own rows a little further out: an index scan
    # that filters after its nearest `ef_search` rows finds none of them.
    crowd = query + rng.normal(scale=0.02, size=(CROWD, EMBEDDING_DIM))
    own = query + rng.normal(scale=0.08, size=(OWN, EMBEDDING_DIM))
    own_ids = [uuid.uuid4() for _ in range(OWN)]
    admin = await asyncpg.connect(stack.database_url)
    try:
        rows = [
            (
                uuid.uuid4(),
                uuid.UUID(tenant.id),
                "crowd",
                None,
                f"crowd {i}",
                "{}",
                vector_literal(v.tolist()),
            )
            for i, v in enumerate(crowd)
        ]
        rows += [
            (m, uuid.UUID(tenant.id), "small", None, f"own {i}", "{}", vector_literal(v.tolist()))
            for i, (m, v) in enumerate(zip(own_ids, own, strict=True))
        ]
        await admin.executemany(INSERT, rows)
        await admin.execute("ANALYZE memories")
    finally:
        await admin.close()
    unit = own / np.linalg.norm(own, axis=1, keepdims=True)
    expected = [own_ids[i] for i in np.argsort(1.0 - unit @ query)[:10]]

    reads = await ScopedReads.open(stack.service_database_url, size=1)
    scope = Scope(tenant_id=tenant.id, subject_id="small", role=Role.agent, key_id="test")
    try:
        found = await HotReads(reads).exact(scope, query.tolist(), 10, None, False)
    finally:
        await reads.close()
    assert [r.id for r in found] == expected
