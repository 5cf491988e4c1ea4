"""Recall's per-replica copy of a large subject's postings against the real database: the subject's keyword
version (migration 0019 with 0018) moves on every write that can change its keyword search, and only its
own; and the copy ranks exactly as the large-subject BM25 statement does when that statement scores every
candidate."""

import uuid
from typing import Any

import asyncpg
import numpy as np
import pytest

from cairn_contracts.identity import Role
from cairn_devstack.cairn import CairnStack
from cairn_recall.keyword import TermStats, document_frequencies, keyword_statement, ranked, subject_size
from cairn_recall.keyword_copy import SubjectPostings
from cairn_recall.store import HotReads, RecallStore
from cairn_scope import Scope
from cairn_storage import create_engine, make_sessionmaker
from cairn_storage.scoped_pool import ScopedReads
from conftest import TenantHandle
from tests.integration.test_knowledge_vector_cache import assert_same_ranking
from tests.integration.test_recall_vector_copy import insert

WORDS = (
    "kubernetes cluster backup restore deploy tuesday standup garden tomato basil recipe invoice budget "
    "flight lisbon passport allergy peanut running marathon sister birthday postgres replica latency "
    "quarterly review thesis chapter deadline cat vet appointment mortgage rate"
).split()


async def keyword_version(conn: asyncpg.Connection, tenant: str, subject: str) -> int:
    value = await conn.fetchval(
        "SELECT coalesce((SELECT version FROM memory_versions WHERE tenant_id = $1 AND subject_id = $2), 0)"
        " + coalesce((SELECT changes FROM memory_live_counts WHERE tenant_id = $1 AND subject_id = $2), 0)",
        uuid.UUID(tenant),
        subject,
    )
    return int(value)


async def test_every_write_that_changes_a_subjects_keyword_search_moves_its_version(
    stack: CairnStack, new_tenant: Any
) -> None:
    tenant, other = (await new_tenant()).id, (await new_tenant()).id
    conn = await asyncpg.connect(stack.database_url)
    try:
        await insert(conn, other, "s", "elsewhere", None)
        other_before = await keyword_version(conn, other, "s")
        start = await keyword_version(conn, tenant, "s")
        first = await insert(conn, tenant, "s", "a plain write, no vector yet", None)
        plain = await keyword_version(conn, tenant, "s")
        assert plain > start  # unlike the vector version: the new row is searchable by its words at once
        await conn.execute(
            "INSERT INTO memory_recalls (memory_id, tenant_id, subject_id, recall_count, last_recalled_at)"
            " SELECT id, tenant_id, subject_id, 1, now() FROM memories WHERE id = $1",
            first,
        )
        assert await keyword_version(conn, tenant, "s") == plain  # recall's own bump
        second = await insert(conn, tenant, "s", "another memory", None)
        inserted = await keyword_version(conn, tenant, "s")
        assert inserted > plain
        await conn.execute("UPDATE memories SET text = 'changed words' WHERE id = $1", second)
        changed = await keyword_version(conn, tenant, "s")
        assert changed > inserted
        await conn.execute("UPDATE memories SET project_id = $2 WHERE id = $1", second, uuid.uuid4())
        moved = await keyword_version(conn, tenant, "s")
        assert moved > changed
        await conn.execute("UPDATE memories SET superseded_by = $2 WHERE id = $1", first, second)
        superseded = await keyword_version(conn, tenant, "s")
        assert superseded > moved
        await conn.execute("DELETE FROM memories WHERE id = $1", second)
        assert await keyword_version(conn, tenant, "s") > superseded
        assert await keyword_version(conn, tenant, "t") == 0  # another subject of the tenant
        assert await keyword_version(conn, other, "s") == other_before  # another tenant
    finally:
        await conn.close()


def sentence(rng: np.random.Generator) -> str:
    return " ".join(rng.choice(WORDS, size=int(rng.integers(3, 30))))


@pytest.mark.parametrize("project_filter", [False, True])
async def test_the_copy_ranks_as_the_bm25_statement(
    stack: CairnStack, tenant: TenantHandle, project_filter: bool
) -> None:
    rng = np.random.default_rng(19)
    project = uuid.uuid4()
    conn = await asyncpg.connect(stack.database_url)
    try:
        ids = []
        for i in range(300):
            role = "assistant" if i % 3 == 0 else "user"
            where = project if i % 7 == 0 else None
            ids.append(await insert(conn, tenant.id, "big", sentence(rng), None, project=where, role=role))
            await insert(conn, tenant.id, "neighbour", sentence(rng), None)  # never in the copy
        for memory_id in ids[40:60]:  # superseded: in neither
            await conn.execute("UPDATE memories SET superseded_by = $2 WHERE id = $1", memory_id, ids[0])
    finally:
        await conn.close()
    # The services' RLS-bound login, scoped by the engine hook as in production (the large-subject
    # statement's candidates come through `cairn_keyword_candidates`, which answers only in scope).
    engine = create_engine(stack.service_database_url, pool_size=1)
    reads = await ScopedReads.open(stack.service_database_url, size=1)
    hot = HotReads(reads)
    scope = Scope(tenant_id=tenant.id, subject_id="big", role=Role.agent, key_id="test")
    try:
        async with make_sessionmaker(engine)() as session:
            store = RecallStore(session)
            docs, terms = await store.subject_postings(scope)
            copy = SubjectPostings.build(await store.keyword_version(scope), docs, terms)
            assert len(copy.memory_ids) == 280  # 300 less 20 superseded
            n_docs, avgdl = await subject_size(session, scope)
            partition = str(project) if project_filter else None
            for _ in range(8):
                words = [*rng.choice(WORDS, size=int(rng.integers(1, 5)), replace=False), "zeppelin"]
                state = await hot.large_subject_state(scope, " ".join(words))
                lexemes = state.lexemes
                assert state.keyword_version == copy.version
                df = await document_frequencies(session, scope, lexemes)
                assert {lex: copy.document_frequency(lex) for lex in lexemes} == {
                    lex: df.get(lex, 0) for lex in lexemes
                }
                # A scan budget past every candidate: the statement scores them all, as the copy does.
                stats = TermStats(n_docs=n_docs, avgdl=avgdl, df=df)
                statement = keyword_statement(scope, lexemes, 40, partition, stats=stats, scan_max=100_000)
                in_sql = await ranked(session, statement)
                in_copy = copy.ranked(lexemes, project if project_filter else None, 40, 1.2, 0.75)
                assert len(in_copy) == len(in_sql) > 0
                # Best first in both: the negated score orders as a distance does.
                assert_same_ranking([(r.id, -r.value) for r in in_copy], [(r.id, -r.value) for r in in_sql])
                by_id = {r.id: r for r in in_sql}
                for mine in in_copy:
                    if mine.id in by_id:
                        assert mine.coverage == pytest.approx(by_id[mine.id].coverage, rel=1e-9)
                        assert mine.speaker == by_id[mine.id].speaker
    finally:
        await engine.dispose()
        await reads.close()
