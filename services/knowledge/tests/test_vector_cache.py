"""Pure logic of the per-replica vector copy: visibility, partition, best chunk, ties, versions, budget.
(Against the real stack, tests/integration/test_knowledge_vector_cache.py checks it against the SQL scan.)"""

import asyncio
import struct
import uuid

import numpy as np
import pytest

from cairn_knowledge.vector_cache import ArticleVectorCache, TenantVectors, VectorRow

DIM = 4


def packed(values: list[float]) -> bytes:
    """pgvector's binary form, as vector_send returns it."""
    return struct.pack(f">hh{len(values)}f", len(values), 0, *values)


def row(
    article: uuid.UUID,
    vector: list[float],
    *,
    tenant_visible: bool = True,
    owner: str | None = None,
    project: uuid.UUID | None = None,
) -> VectorRow:
    return VectorRow(article, tenant_visible, owner, project, packed(vector))


def ids(n: int) -> list[uuid.UUID]:
    return sorted(uuid.uuid4() for _ in range(n))


def test_nearest_orders_by_cosine_distance_of_the_best_chunk() -> None:
    a, b, c = ids(3)
    tenant = TenantVectors.build(
        1,
        [
            row(a, [1, 0, 0, 0]),
            row(b, [0, 1, 0, 0]),
            row(b, [0.9, 0.1, 0, 0]),  # b's second chunk is nearer than a's only vector
            row(c, [0, 0, 1, 0]),
        ],
        DIM,
    )
    found = tenant.nearest("s", None, [1, 0.2, 0, 0], 3)
    assert [x for x, _ in found] == [b, a, c]
    expected = 1 - np.dot([0.9, 0.1, 0, 0], [1, 0.2, 0, 0]) / (
        np.linalg.norm([0.9, 0.1]) * np.linalg.norm([1, 0.2])
    )
    assert found[0][1] == pytest.approx(expected, abs=1e-6)
    assert found[2][1] == pytest.approx(1.0, abs=1e-6)


def test_only_tenant_visible_and_the_callers_own_owner_articles_are_seen() -> None:
    shared, mine, theirs = ids(3)
    tenant = TenantVectors.build(
        1,
        [
            row(shared, [1, 0, 0, 0]),
            row(mine, [1, 0, 0, 0], tenant_visible=False, owner="me"),
            row(theirs, [1, 0, 0, 0], tenant_visible=False, owner="them"),
        ],
        DIM,
    )
    assert {x for x, _ in tenant.nearest("me", None, [1, 0, 0, 0], 10)} == {shared, mine}
    assert {x for x, _ in tenant.nearest("them", None, [1, 0, 0, 0], 10)} == {shared, theirs}
    assert {x for x, _ in tenant.nearest("nobody", None, [1, 0, 0, 0], 10)} == {shared}


def test_global_articles_plus_the_requested_projects() -> None:
    p1, p2 = uuid.uuid4(), uuid.uuid4()
    glob, in_p1, in_p2 = ids(3)
    tenant = TenantVectors.build(
        1,
        [row(glob, [1, 0, 0, 0]), row(in_p1, [1, 0, 0, 0], project=p1), row(in_p2, [1, 0, 0, 0], project=p2)],
        DIM,
    )
    assert {x for x, _ in tenant.nearest("s", None, [1, 0, 0, 0], 10)} == {glob}
    assert {x for x, _ in tenant.nearest("s", p1, [1, 0, 0, 0], 10)} == {glob, in_p1}
    assert {x for x, _ in tenant.nearest("s", uuid.uuid4(), [1, 0, 0, 0], 10)} == {glob}


def test_equal_distances_at_the_cut_are_broken_by_id() -> None:
    articles = ids(6)
    tenant = TenantVectors.build(1, [row(a, [0, 1, 0, 0]) for a in reversed(articles)], DIM)
    assert [x for x, _ in tenant.nearest("s", None, [0, 1, 0, 0], 3)] == articles[:3]


def test_an_empty_tenant_and_a_zero_limit_find_nothing() -> None:
    assert TenantVectors.build(0, [], DIM).nearest("s", None, [1, 0, 0, 0], 5) == []
    (a,) = ids(1)
    assert TenantVectors.build(1, [row(a, [1, 0, 0, 0])], DIM).nearest("s", None, [1, 0, 0, 0], 0) == []


async def test_a_copy_is_reused_until_the_tenant_version_moves_and_loads_are_shared() -> None:
    cache = ArticleVectorCache(max_rows=100)
    versions = {"t": 1}
    (a,) = ids(1)

    async def load(tenant_id: str) -> TenantVectors:
        await asyncio.sleep(0.01)
        return TenantVectors.build(versions[tenant_id], [row(a, [1, 0, 0, 0])], DIM)

    first = await asyncio.gather(*(cache.at_least("t", 1, load) for _ in range(5)))
    assert cache.loads == 1
    assert all(t is first[0] for t in first)
    assert await cache.at_least("t", 1, load) is first[0]
    assert cache.loads == 1
    versions["t"] = 2
    moved = await cache.at_least("t", 2, load)
    assert moved is not None
    assert moved.version == 2
    assert cache.loads == 2


async def test_least_recently_used_tenants_leave_past_the_row_budget() -> None:
    cache = ArticleVectorCache(max_rows=2)

    async def load(tenant_id: str) -> TenantVectors:
        return TenantVectors.build(
            1, [row(a, [1, 0, 0, 0]) for a in ids(1 if tenant_id != "big" else 3)], DIM
        )

    assert await cache.at_least("t1", 1, load) is not None
    assert await cache.at_least("t2", 1, load) is not None
    assert await cache.at_least("t3", 1, load) is not None  # t1 leaves
    assert cache.loads == 3
    await cache.at_least("t2", 1, load)
    assert cache.loads == 3  # still held
    await cache.at_least("t1", 1, load)
    assert cache.loads == 4  # it had left
    assert await cache.at_least("big", 1, load) is None  # never fits: the caller searches in SQL
