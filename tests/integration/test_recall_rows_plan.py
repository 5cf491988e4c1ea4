"""Recall reads its chosen memories by id, and that read must stay an id lookup under the generic plan a
prepared statement settles on after five runs. Once a table holds many subjects, that plan estimates any
one subject at a handful of rows, and without the statement's fence it ANDed the subject's scope index into
the lookup: every index entry of a large subject read on each recall."""

import uuid

import asyncpg
from sqlalchemy.dialects.postgresql import asyncpg as asyncpg_dialect

from cairn_contracts.identity import Role
from cairn_devstack.cairn import CairnStack
from cairn_recall import store
from cairn_recall.store import HotReads
from cairn_scope import Scope
from cairn_storage.scoped_pool import ScopedReads
from conftest import TenantHandle
from tests.integration.test_recall_vector_copy import INSERT

LARGE = 3000
SMALL_SUBJECTS = 200


async def _seed(stack: CairnStack, tenant: TenantHandle) -> tuple[list[uuid.UUID], list[uuid.UUID]]:
    """A large subject among many small ones; the large subject's ids and another subject's."""
    tenant_id = uuid.UUID(tenant.id)
    large = [uuid.uuid4() for _ in range(LARGE)]
    rows = [(m, tenant_id, "large", None, f"large {i}", "{}", None) for i, m in enumerate(large)]
    others: list[uuid.UUID] = []
    for s in range(SMALL_SUBJECTS):
        for i in range(5):
            others.append(uuid.uuid4())
            rows.append((others[-1], tenant_id, f"small-{s}", None, f"small {s} {i}", "{}", None))
    admin = await asyncpg.connect(stack.database_url)
    try:
        await admin.executemany(INSERT, rows)
        await admin.execute("ANALYZE memories")
    finally:
        await admin.close()
    return large, others


async def test_the_rows_read_is_an_id_lookup_under_the_generic_plan(
    stack: CairnStack, tenant: TenantHandle
) -> None:
    large, _ = await _seed(stack, tenant)
    compiled = store._ROWS.compile(dialect=asyncpg_dialect.dialect())
    sql, names = compiled.string, compiled.positiontup or []
    types = {"tenant_id": "uuid", "subject_id": "text", "ids": "uuid[]"}
    values = {"tenant_id": f"'{tenant.id}'", "subject_id": "'large'", "ids": f"ARRAY['{large[7]}']::uuid[]"}
    conn = await asyncpg.connect(stack.service_database_url)
    try:
        await conn.execute(
            "SELECT set_config('cairn.tenant_id', $1, false), set_config('cairn.subject_id', 'large', false)",
            tenant.id,
        )
        await conn.execute(f"PREPARE rows_by_id({', '.join(types[n] for n in names)}) AS {sql}")
        await conn.execute("SET plan_cache_mode = force_generic_plan")
        plan = "\n".join(
            r[0]
            for r in await conn.fetch(f"EXPLAIN EXECUTE rows_by_id({', '.join(values[n] for n in names)})")
        )
    finally:
        await conn.close()
    assert "memories_pkey" in plan
    assert "memories_scope_created_idx" not in plan, plan


async def test_the_rows_read_returns_only_the_subjects_own_rows(
    stack: CairnStack, tenant: TenantHandle
) -> None:
    large, others = await _seed(stack, tenant)
    reads = await ScopedReads.open(stack.service_database_url, size=1)
    scope = Scope(tenant_id=tenant.id, subject_id="large", role=Role.agent, key_id="test")
    try:
        # Past five runs, so the prepared statement may have settled on its generic plan.
        for _ in range(7):
            found = await HotReads(reads).rows(scope, [large[0], large[1], others[0], others[1]])
    finally:
        await reads.close()
    assert set(found) == {large[0], large[1]}
