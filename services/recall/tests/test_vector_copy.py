"""Pure logic of a large subject's vector copy: best chunk, partition, ties, speakers, and the versioned
cache's background reloads, their spacing and refusals. (Against the real stack,
tests/integration/test_recall_vector_copy.py checks it against the SQL exact statement.)"""

import asyncio
import struct
import uuid

import numpy as np
import pytest

from cairn_recall.vector_copy import SubjectVectorCopies, SubjectVectorRow, SubjectVectors

DIM = 4


def packed(values: list[float]) -> bytes:
    """pgvector's binary form, as vector_send returns it."""
    return struct.pack(f">hh{len(values)}f", len(values), 0, *values)


def row(
    memory: uuid.UUID, vector: list[float], *, project: uuid.UUID | None = None, head: str = "a fact"
) -> SubjectVectorRow:
    return SubjectVectorRow(memory, project, head, None, packed(vector))


def ids(n: int) -> list[uuid.UUID]:
    return sorted(uuid.uuid4() for _ in range(n))


def test_each_memory_ranks_by_its_nearest_vector_head_or_chunk() -> None:
    a, b, c = ids(3)
    subject = SubjectVectors.build(
        1,
        [row(b, [0, 1, 0, 0]), row(a, [1, 0, 0, 0]), row(c, [0, 0, 1, 0]), row(b, [0.9, 0.1, 0, 0])],
        DIM,
    )
    assert subject.rows == 4
    found = subject.nearest(None, [1, 0.2, 0, 0], 2)
    assert [r.id for r in found] == [b, a]  # b's chunk is nearer than a's head
    assert found[0].value < found[1].value


def test_the_partition_is_global_plus_the_asked_project() -> None:
    mine, other = uuid.uuid4(), uuid.uuid4()
    g, p, q = ids(3)
    subject = SubjectVectors.build(
        1,
        [row(g, [1, 0, 0, 0]), row(p, [1, 0, 0, 0], project=mine), row(q, [1, 0, 0, 0], project=other)],
        DIM,
    )
    assert [r.id for r in subject.nearest(None, [1, 0, 0, 0], 10)] == [g]
    assert {r.id for r in subject.nearest(mine, [1, 0, 0, 0], 10)} == {g, p}
    assert [r.id for r in subject.nearest(uuid.uuid4(), [1, 0, 0, 0], 10)] == [g]  # unknown: just global


def test_ties_at_the_cut_break_by_id_and_speakers_come_from_the_head() -> None:
    many = ids(5)
    subject = SubjectVectors.build(
        1, [row(m, [0, 1, 0, 0], head=f"user: turn {i}") for i, m in enumerate(reversed(many))], DIM
    )
    found = subject.nearest(None, [0, 1, 0, 0], 3)
    assert [r.id for r in found] == many[:3]
    assert {r.speaker for r in found} == {"user"}


def test_an_empty_subject_finds_nothing() -> None:
    assert SubjectVectors.build(0, [], DIM).nearest(None, [1, 0, 0, 0], 5) == []


async def test_a_stale_copy_is_reloaded_in_the_background_and_spaced() -> None:
    copies = SubjectVectorCopies(max_rows=100, load_cost_factor=0.0)
    loads: list[int] = []
    version = {"now": 1}

    async def load(_: tuple[str, str]) -> SubjectVectors:
        loads.append(version["now"])
        await asyncio.sleep(0.01)
        return SubjectVectors.build(version["now"], [row(uuid.uuid4(), [1, 0, 0, 0])], DIM)

    key = ("t", "s")
    assert copies.if_current(key, 1, load, min_interval=0.0) is None  # nothing yet: SQL, and a load starts
    assert copies.if_current(key, 1, load, min_interval=0.0) is None  # one load at a time
    await copies.settled()
    copy = copies.if_current(key, 1, load, min_interval=0.0)
    assert copy is not None
    assert copy.version == 1
    assert loads == [1]
    version["now"] = 2  # a write moved the subject's version
    assert copies.if_current(key, 2, load, min_interval=60.0) is None  # stale: never served
    await copies.settled()
    assert loads == [1]  # the last load began under a minute ago
    assert copies.if_current(key, 2, load, min_interval=0.0) is None
    await copies.settled()
    refreshed = copies.if_current(key, 2, load, min_interval=0.0)
    assert refreshed is not None
    assert refreshed.version == 2


async def test_a_subject_that_does_not_fit_is_refused_for_a_while() -> None:
    copies = SubjectVectorCopies(max_rows=2, refusal_seconds=60.0)
    calls = 0

    async def too_many(_: tuple[str, str]) -> SubjectVectors:
        nonlocal calls
        calls += 1
        return SubjectVectors.build(1, [row(m, [1, 0, 0, 0]) for m in ids(3)], DIM)

    async def too_large(_: tuple[str, str]) -> None:
        nonlocal calls
        calls += 1

    for key, load in ((("t", "a"), too_many), (("t", "b"), too_large)):
        assert copies.if_current(key, 1, load, min_interval=0.0) is None
        await copies.settled()
        assert copies.if_current(key, 1, load, min_interval=0.0) is None
        await copies.settled()
    assert calls == 2  # each loaded once, then refused without another load
    assert copies.rows() == 0


async def test_least_recently_used_subjects_leave_first() -> None:
    copies = SubjectVectorCopies(max_rows=2)

    def loader(n: int):  # type: ignore[no-untyped-def]
        async def load(_: tuple[str, str]) -> SubjectVectors:
            return SubjectVectors.build(1, [row(uuid.uuid4(), [1, 0, 0, 0]) for _ in range(n)], DIM)

        return load

    assert await copies.at_least(("t", "a"), 1, loader(1)) is not None
    assert await copies.at_least(("t", "b"), 1, loader(1)) is not None
    assert copies.if_current(("t", "a"), 1, loader(1), 0.0) is not None  # a used last
    assert await copies.at_least(("t", "c"), 1, loader(1)) is not None
    assert copies.if_current(("t", "a"), 1, loader(1), 60.0) is not None
    assert copies.if_current(("t", "b"), 1, loader(1), 60.0) is None  # evicted
    await copies.settled()


@pytest.mark.parametrize("limit", [0, -1])
def test_no_limit_no_rows(limit: int) -> None:
    subject = SubjectVectors.build(1, [row(uuid.uuid4(), [1, 0, 0, 0])], DIM)
    assert subject.nearest(None, [1, 0, 0, 0], limit) == []


async def test_concurrent_recalls_share_a_product_and_get_their_own_distances() -> None:
    rng = np.random.default_rng(11)
    memories = ids(40)
    rows = [row(m, rng.normal(size=DIM).tolist()) for m in memories]
    rows += [row(m, rng.normal(size=DIM).tolist()) for m in memories[:10]]  # chunks of the first ten
    subject = SubjectVectors.build(1, rows, DIM)
    queries = [rng.normal(size=DIM).tolist() for _ in range(9)]
    together = await asyncio.gather(*(subject.nearest_batched(None, q, 5) for q in queries))
    assert subject.scorer.batches < len(queries)  # the first went alone, the rest queued behind it
    for query, (found, similarities) in zip(queries, together, strict=True):
        alone = subject.nearest(None, query, 5)
        assert [r.id for r in found] == [r.id for r in alone]
        assert [r.value for r in found] == pytest.approx([r.value for r in alone], abs=1e-6)
        for hit in alone:  # each memory's score is the similarity of its best vector
            assert similarities.of(hit.id) == pytest.approx(1 - hit.value, abs=1e-6)
    assert together[0][1].of(uuid.uuid4()) is None  # not in the copy: no vector, no score


async def test_a_cancelled_recall_does_not_stop_the_others_of_its_batch() -> None:
    a, b = ids(2)
    subject = SubjectVectors.build(1, [row(a, [1, 0, 0, 0]), row(b, [0, 1, 0, 0])], DIM)
    first = asyncio.ensure_future(subject.nearest_batched(None, [1, 0, 0, 0], 1))
    cancelled = asyncio.ensure_future(subject.nearest_batched(None, [0, 1, 0, 0], 1))
    last = asyncio.ensure_future(subject.nearest_batched(None, [0, 1, 0, 0], 1))
    await asyncio.sleep(0)
    cancelled.cancel()
    assert [r.id for r in (await first)[0]] == [a]
    assert [r.id for r in (await last)[0]] == [b]
    assert cancelled.cancelled()


async def test_reloads_of_a_costly_copy_are_spaced_by_its_load_time() -> None:
    copies = SubjectVectorCopies(max_rows=100, load_cost_factor=10.0)
    loads: list[int] = []

    async def load(_: tuple[str, str]) -> SubjectVectors:
        loads.append(1)
        await asyncio.sleep(0.05)  # a load of 50 ms (more on a loaded machine): reloads 10x that apart
        return SubjectVectors.build(len(loads), [row(uuid.uuid4(), [1, 0, 0, 0])], DIM)

    key = ("t", "s")
    assert copies.if_current(key, 1, load, min_interval=0.0) is None
    await copies.settled()
    assert copies.if_current(key, 2, load, min_interval=0.0) is None  # stale; 10 x 50 ms not yet past
    await copies.settled()
    assert loads == [1]
    await asyncio.sleep(1.5)  # past the spacing even if the load took 150 ms
    assert copies.if_current(key, 2, load, min_interval=0.0) is None
    await copies.settled()
    assert loads == [1, 1]
    assert copies.if_current(key, 2, load, min_interval=0.0) is not None
