"""Graduation through the gateway, Temporal and the novelty gate: hot memories become owner-visible articles."""

import asyncio
import hashlib
import json
import os
import signal
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import asyncpg
import httpx
import numpy as np
import pytest
from aiohttp import web
from temporalio.client import Client, WorkflowExecutionStatus

from cairn_contracts.graduation import SweepParams
from cairn_devstack import free_port
from cairn_devstack.cairn import CairnStack
from cairn_graduation.worker import SWEEP_SCHEDULE_ID
from cairn_graduation.workflows import GraduateMemory, SweepGraduations, graduation_workflow_id
from conftest import TenantHandle, bearer
from tests.bus_helpers import connect_as, temporal_client
from tests.e2e.test_memory import remember
from tests.e2e.test_spine import assert_envelope

NewTenant = Callable[[], Awaitable[TenantHandle]]

# Graduation under test: a short gate-call timeout so a killed worker's attempt is retried quickly.
GRADUATION_ENV = {"CAIRN_GRADUATION_PROPOSE_TIMEOUT_SECONDS": "6"}
# The memory service bumps a memory at most once per cooldown, and recall announces it at most once per the
# same cooldown: 1 s on both lets a test drive "three hours".
MEMORY_ENV = {"CAIRN_HOT_COOLDOWN_SECONDS": "1"}


@pytest.fixture(scope="module")
async def graduation_stack(stack: CairnStack) -> AsyncIterator[CairnStack]:
    """The stack with a 1 s recall-bump cooldown and a short gate timeout; restored afterwards."""
    for service in ("memory", "recall", "graduation"):
        await stack.supervisor.stop(service)
    await stack.start_service("memory", "cairn_memory", **MEMORY_ENV)
    await stack.start_service("recall", "cairn_recall", **MEMORY_ENV)
    await stack.start_service("graduation", "cairn_graduation", **GRADUATION_ENV)
    await stack.wait_ready()
    try:
        yield stack
    finally:
        for service in ("memory", "recall", "graduation"):
            await stack.supervisor.stop(service)
        await stack.start_service("memory", "cairn_memory")
        await stack.start_service("recall", "cairn_recall")
        await stack.start_service("graduation", "cairn_graduation")
        await stack.wait_ready()


@pytest.fixture(scope="module")
async def temporal(graduation_stack: CairnStack) -> Client:
    return await temporal_client(graduation_stack)


@pytest.fixture
async def db(graduation_stack: CairnStack) -> AsyncIterator[asyncpg.Connection]:
    conn = await asyncpg.connect(graduation_stack.database_url)
    try:
        yield conn
    finally:
        await conn.close()


async def graduate(http: httpx.AsyncClient, key: str, memory_id: Any, **extra: Any) -> httpx.Response:
    return await http.post(
        "/api/v1/memory/graduate", json={"memory_id": memory_id, **extra}, headers=bearer(key)
    )


async def graduated(response: httpx.Response, status: int, verdict: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    data: dict[str, Any] = response.json()["data"]
    assert data["verdict"] == verdict
    assert data["created"] is (status == 201)
    assert data["article"]["body"] is None  # a summary: the body is fetched with GET
    return data


async def stamp_of(db: asyncpg.Connection, memory_id: str) -> asyncpg.Record:
    row = await db.fetchrow(
        "SELECT graduated_at, graduated_article_id, graduated_scope FROM memories WHERE id = $1",
        uuid.UUID(memory_id),
    )
    assert row is not None
    return row


async def graduated_articles(db: asyncpg.Connection, memory_id: str) -> list[asyncpg.Record]:
    return list(
        await db.fetch(
            "SELECT id, project_id, visibility, owner_subject_id FROM articles WHERE source_memory_id = $1",
            memory_id,
        )
    )


async def wait_embedded(http: httpx.AsyncClient, key: str, memory_id: str) -> None:
    for _ in range(200):
        got = (await http.get(f"/api/v1/memory/{memory_id}", headers=bearer(key))).json()["data"]
        if got["embedding_status"] == "ready":
            return
        await asyncio.sleep(0.1)
    raise AssertionError("memory never embedded")


async def project(http: httpx.AsyncClient, key: str) -> str:
    slug = f"p-{uuid.uuid4().hex[:8]}"
    r = await http.post("/api/v1/projects", json={"name": slug, "slug": slug}, headers=bearer(key))
    assert r.status_code == 201, r.text
    return str(r.json()["data"]["id"])


async def wait_idle(temporal: Client, query: str, timeout: float = 120) -> None:
    for _ in range(int(timeout / 0.25)):
        running = [w async for w in temporal.list_workflows(f"{query} AND ExecutionStatus = 'Running'")]
        if not running:
            return
        await asyncio.sleep(0.25)
    raise AssertionError(f"still running: {query}")


async def sweep_now(temporal: Client) -> None:
    """Run one sweep tick through the schedule (as `temporal schedule trigger` does) and wait for it."""
    await wait_idle(temporal, "WorkflowType = 'SweepGraduations'")
    # A scheduled run's id carries its start time to the second: two triggers within one second collide.
    await asyncio.sleep(1.1)
    before = {w.run_id async for w in temporal.list_workflows("WorkflowType = 'SweepGraduations'")}
    await temporal.get_schedule_handle(SWEEP_SCHEDULE_ID).trigger()
    for _ in range(120):
        now = {w.run_id async for w in temporal.list_workflows("WorkflowType = 'SweepGraduations'")}
        if now - before:
            break
        await asyncio.sleep(0.25)
    else:
        raise AssertionError("the schedule started no sweep")
    await wait_idle(temporal, "WorkflowType = 'SweepGraduations'", timeout=240)


async def insert_hot(
    db: asyncpg.Connection, tenant_id: str, subject_id: str, texts: list[str], recall_count: int = 3
) -> list[str]:
    """Bulk setup for the scale tests: live memories that already carry `recall_count` counted recalls
    (and a placeholder vector, so the embedding worker leaves them alone)."""
    ids = [uuid.uuid4() for _ in texts]
    vector = "[" + ",".join(["0.05103103630798288"] * 384) + "]"
    await db.executemany(
        """
        INSERT INTO memories (id, tenant_id, subject_id, text, embedding, embedding_content_hash,
                              embedding_model, confidence, source, tags, metadata)
        VALUES ($1, $2, $3, $4, $5::vector, $6, 'placeholder', 1.0, 'explicit', '{}', '{}')
        """,
        [
            (
                i,
                uuid.UUID(tenant_id),
                subject_id,
                t,
                vector,
                hashlib.sha256(t.encode()).hexdigest(),
            )
            for i, t in zip(ids, texts, strict=True)
        ],
    )
    await db.execute(
        "INSERT INTO memory_recalls (memory_id, tenant_id, subject_id, recall_count, last_recalled_at)"
        " SELECT id, tenant_id, subject_id, $2, now() FROM memories WHERE id = ANY($1::uuid[])",
        ids,
        recall_count,
    )
    return [str(i) for i in ids]


async def count_graduated(db: asyncpg.Connection, ids: list[str]) -> int:
    value = await db.fetchval(
        "SELECT count(*) FROM memories WHERE id = ANY($1::uuid[]) AND graduated_at IS NOT NULL",
        [uuid.UUID(i) for i in ids],
    )
    return int(value)


def distinct_texts(prefix: str, n: int) -> list[str]:
    words = ["amber", "basalt", "cobalt", "delta", "ember", "fjord", "garnet", "harbor", "indigo", "juniper"]
    return [
        f"{prefix} record {i}: the {words[i % 10]} {words[(i // 10) % 10]} ledger lists item {uuid.uuid4().hex[:12]}"
        for i in range(n)
    ]


class TestSweep:
    async def test_a_memory_recalled_on_three_hours_graduates_for_its_owner_only(
        self,
        http: httpx.AsyncClient,
        tenant: TenantHandle,
        new_tenant: NewTenant,
        temporal: Client,
        db: asyncpg.Connection,
    ) -> None:
        key = await tenant.agent("owner")
        hot = await remember(http, key, text="The nightly backup of the billing cluster runs at 02:30 UTC")
        cold = await remember(http, key, text="Our mascot is a small green heron called Pip")
        await wait_embedded(http, key, hot["id"])
        await wait_embedded(http, key, cold["id"])
        counts: list[int] = []
        for hour in range(3):  # three recalls, each past the (test) one-second cooldown
            r = await http.post(
                "/api/v1/memory/recall",
                json={"query": "when does the billing cluster backup run"},
                headers=bearer(key),
            )
            assert r.json()["data"][0]["memory"]["id"] == hot["id"]
            assert r.json()["data"][0]["score"] >= 0.6
            for _ in range(50):
                got = (await http.get(f"/api/v1/memory/{hot['id']}", headers=bearer(key))).json()["data"]
                if got["recall_count"] == hour + 1:
                    break
                await asyncio.sleep(0.1)
            counts.append(got["recall_count"])
            await asyncio.sleep(1.2)
        assert counts == [1, 2, 3]
        await sweep_now(temporal)
        stamp = await stamp_of(db, hot["id"])
        assert stamp["graduated_at"] is not None
        assert stamp["graduated_scope"] == "global"
        assert (await stamp_of(db, cold["id"]))["graduated_at"] is None  # below the threshold
        article_id = str(stamp["graduated_article_id"])
        # operators find it by tenant and by memory; its progress says what happened
        runs = [w async for w in temporal.list_workflows(f"CairnMemoryId = '{hot['id']}'")]
        assert [w.id for w in runs] == [graduation_workflow_id(tenant.id, "owner", hot["id"])]
        handle = temporal.get_workflow_handle_for(GraduateMemory.run, runs[0].id)
        progress = await handle.query(GraduateMemory.progress)
        assert (progress.stage, progress.article_id, progress.scope) == ("done", article_id, "global")
        assert progress.verdict in ("created", "gated_to_draft")
        # the owner reads it, finds it by knowledge search and through merged recall
        got = await http.get(f"/api/v1/knowledge/{article_id}", headers=bearer(key))
        assert got.status_code == 200, got.text
        article = got.json()["data"]
        assert article["body"] == hot["text"]
        assert (article["visibility"], article["owner_subject_id"], article["source"]) == (
            "owner",
            "owner",
            "graduated",
        )
        assert article["source_memory_id"] == hot["id"]
        search = await http.post(
            "/api/v1/knowledge/search", json={"query": "billing cluster backup time"}, headers=bearer(key)
        )
        assert search.status_code == 200, search.text
        assert article_id in [h["id"] for h in search.json()["data"]]
        merged = await http.post(
            "/api/v1/recall", json={"query": "billing cluster backup"}, headers=bearer(key)
        )
        assert merged.status_code == 200, merged.text
        knowledge_ids = [i["id"] for i in merged.json()["data"] if i["source"] == "knowledge"]
        assert article_id in knowledge_ids
        # nobody else: another subject of the tenant, another tenant
        other_tenant = await new_tenant()
        for intruder in (await tenant.agent("peer"), await other_tenant.agent("owner")):
            assert_envelope(
                await http.get(f"/api/v1/knowledge/{article_id}", headers=bearer(intruder)), 404, "not_found"
            )
            found = await http.post(
                "/api/v1/knowledge/search",
                json={"query": "billing cluster backup time"},
                headers=bearer(intruder),
            )
            assert article_id not in [h["id"] for h in found.json()["data"]]
            merged = await http.post(
                "/api/v1/recall", json={"query": "billing cluster backup"}, headers=bearer(intruder)
            )
            assert article_id not in [i["id"] for i in merged.json()["data"]]
            assert_envelope(await graduate(http, intruder, hot["id"]), 404, "not_found")
        # a second tick leaves it alone (stamped), and on demand it short-circuits to the same article
        await sweep_now(temporal)
        assert len(await graduated_articles(db, hot["id"])) == 1
        again = await graduated(await graduate(http, key, hot["id"]), 200, "already_graduated")
        assert again["article"]["id"] == article_id

    async def test_round_robin_serves_a_small_tenant_beside_a_busy_one(
        self, http: httpx.AsyncClient, new_tenant: NewTenant, temporal: Client, db: asyncpg.Connection
    ) -> None:
        busy, small = await new_tenant(), await new_tenant()
        busy_ids = await insert_hot(db, busy.id, "bulk", distinct_texts("Busy", 500))
        small_ids = await insert_hot(db, small.id, "few", distinct_texts("Small", 5))
        try:
            await sweep_now(temporal)  # one tick: at most CAIRN_GRADUATION_MAX_PER_RUN (50)
            assert await count_graduated(db, small_ids) == 5
            busy_done = await count_graduated(db, busy_ids)
            assert 1 <= busy_done <= 45
            print(f"\nround-robin tick: small tenant 5/5, busy tenant {busy_done}/500")  # noqa: T201
        finally:  # the busy tenant's leftovers must not crowd later ticks
            await db.execute("DELETE FROM memories WHERE tenant_id = $1", uuid.UUID(busy.id))

    async def test_the_tenant_threshold_overrides_the_default(
        self,
        http: httpx.AsyncClient,
        new_tenant: NewTenant,
        admin_key: str,
        temporal: Client,
        db: asyncpg.Connection,
    ) -> None:
        eager, default = await new_tenant(), await new_tenant()
        for bad in (0, -1, "three"):
            assert_envelope(
                await http.patch(
                    f"/api/v1/tenants/{eager.id}",
                    json={"graduation_recall_threshold": bad},
                    headers=bearer(admin_key),
                ),
                422,
                "validation_error",
            )
        r = await http.patch(
            f"/api/v1/tenants/{eager.id}", json={"graduation_recall_threshold": 1}, headers=bearer(admin_key)
        )
        assert r.status_code == 200, r.text
        assert r.json()["data"]["graduation_recall_threshold"] == 1
        agent = await eager.agent()
        assert_envelope(
            await http.patch(
                f"/api/v1/tenants/{eager.id}", json={"graduation_recall_threshold": 2}, headers=bearer(agent)
            ),
            403,
            "forbidden",
        )
        eager_ids = await insert_hot(db, eager.id, "a", distinct_texts("Eager", 2), recall_count=1)
        default_ids = await insert_hot(db, default.id, "a", distinct_texts("Default", 2), recall_count=2)
        await sweep_now(temporal)
        assert await count_graduated(db, eager_ids) == 2
        assert await count_graduated(db, default_ids) == 0  # 2 < the default threshold of 3

    async def test_a_sweep_keeps_its_history_bounded_however_many_candidates(
        self, new_tenant: NewTenant, temporal: Client, db: asyncpg.Connection
    ) -> None:
        """The bounded-history property with small batch knobs (continue-as-new every 20 children), so it
        fits the suite's time budget; bench/graduation_throughput.py runs 5,000 candidates with the
        production knobs and prints the same event counts."""
        tenant = await new_tenant()
        ids: list[str] = []
        for subject in range(4):
            ids += await insert_hot(db, tenant.id, f"agent-{subject}", distinct_texts(f"Scale {subject}", 60))
        params = SweepParams(max_per_run=240, batch_size=10, batches_per_run=2)
        sweep_id = f"test-sweep-{uuid.uuid4().hex[:8]}"
        started = time.perf_counter()
        handle = await temporal.start_workflow(
            SweepGraduations.run, params, id=sweep_id, task_queue=params.task_queue
        )
        result = await handle.result()
        elapsed = time.perf_counter() - started
        assert await count_graduated(db, ids) == 240
        assert result.graduated >= 240 - result.already_graduated
        runs = [w async for w in temporal.list_workflows(f"WorkflowId = '{sweep_id}'")]
        events = []
        for run in runs:
            history = await temporal.get_workflow_handle(sweep_id, run_id=run.run_id).fetch_history()
            events.append(len(history.events))
        print(  # noqa: T201 (the issue asks for the event count)
            f"\n240-candidate sweep: {len(runs)} runs (continue-as-new), history events per run "
            f"max {max(events)}, total {sum(events)}; {elapsed:.1f} s"
        )
        assert len(runs) == result.runs >= 12
        # Bounded per run: about 6.5 events per child, 20 children a run, whatever the candidate count.
        assert max(events) < 400


class FakeEmbeddings:
    """An OpenAI-compatible embeddings endpoint for one tenant: deterministic vectors, can stall once."""

    def __init__(self) -> None:
        self.calls = 0
        self.stall_next_seconds = 0.0
        self.stalled = asyncio.Event()

    async def embeddings(self, request: web.Request) -> web.Response:
        self.calls += 1
        body = await request.json()
        if self.stall_next_seconds:
            stall, self.stall_next_seconds = self.stall_next_seconds, 0.0
            self.stalled.set()
            await asyncio.sleep(stall)
        data = []
        for i, text in enumerate(body["input"]):
            seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
            vector = np.random.default_rng(seed).normal(size=384)
            data.append({"index": i, "embedding": list(vector / np.linalg.norm(vector))})
        return web.json_response({"data": data, "model": body["model"]})


@pytest.fixture
async def fake_embeddings() -> AsyncIterator[tuple[FakeEmbeddings, str]]:
    fake = FakeEmbeddings()
    app = web.Application()
    app.router.add_post("/v1/embeddings", fake.embeddings)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        yield fake, f"http://127.0.0.1:{port}/v1"
    finally:
        await runner.cleanup()


async def set_embedding_provider(
    http: httpx.AsyncClient, admin_key: str, tenant_id: str, base_url: str | None
) -> None:
    body: dict[str, Any] = {"embedding": None}
    if base_url is not None:
        body = {"embedding": {"base_url": base_url, "model": "fake", "api_key": "tenant-embedding-key"}}
    r = await http.put(f"/api/v1/tenants/{tenant_id}/providers", json=body, headers=bearer(admin_key))
    assert r.status_code == 200, r.text
    await asyncio.sleep(1.5)  # CAIRN_PROVIDER_CACHE_TTL_SECONDS is 1 s under test


class TestOnDemand:
    async def test_created_then_already_graduated_without_the_gate(
        self, http: httpx.AsyncClient, tenant: TenantHandle, temporal: Client, db: asyncpg.Connection
    ) -> None:
        key = await tenant.agent("owner")
        memory = await remember(http, key, text="The on-call rotation hands over every Monday at 09:00")
        first = await graduated(await graduate(http, key, memory["id"]), 201, "created")
        article = first["article"]
        assert (article["visibility"], article["owner_subject_id"], article["source"]) == (
            "owner",
            "owner",
            "graduated",
        )
        assert (article["source_memory_id"], article["project_id"], article["status"]) == (
            memory["id"],
            None,
            "published",
        )
        stamp = await stamp_of(db, memory["id"])
        assert (str(stamp["graduated_article_id"]), stamp["graduated_scope"]) == (article["id"], "global")
        for _ in range(2):
            again = await graduated(await graduate(http, key, memory["id"]), 200, "already_graduated")
            assert again["article"]["id"] == article["id"]
        # the repeat ran no gate: its workflow went load -> existing article, never propose
        workflow_id = graduation_workflow_id(tenant.id, "owner", memory["id"])
        history = await temporal.get_workflow_handle(workflow_id).fetch_history()
        activities = [
            e.activity_task_scheduled_event_attributes.activity_type.name
            for e in history.events
            if e.HasField("activity_task_scheduled_event_attributes")
        ]
        assert activities == ["load", "existing_article"]
        assert (await stamp_of(db, memory["id"]))["graduated_at"] == stamp["graduated_at"]
        assert len(await graduated_articles(db, memory["id"])) == 1

    async def test_duplicate_deduplicated_and_gated_to_draft(
        self, http: httpx.AsyncClient, tenant: TenantHandle, db: asyncpg.Connection
    ) -> None:
        key = await tenant.agent("owner")
        # duplicate: an article the owner can see already has this exact body
        text = "Invoices are generated on the first business day of each month"
        proposed = await http.post(
            "/api/v1/knowledge", json={"title": "Invoice schedule", "body": text}, headers=bearer(key)
        )
        assert proposed.status_code == 201, proposed.text
        memory = await remember(http, key, text=text)
        dup = await graduated(await graduate(http, key, memory["id"]), 200, "duplicate")
        assert dup["article"]["id"] == proposed.json()["data"]["article"]["id"]
        assert str((await stamp_of(db, memory["id"]))["graduated_article_id"]) == dup["article"]["id"]
        # deduplicated: the owner already has an owner-visible article with this title
        first = await remember(
            http, key, text="Release train\nThe release train leaves every second Thursday"
        )
        made = await graduated(await graduate(http, key, first["id"]), 201, "created")
        second = await remember(http, key, text="Release train\nA hotfix may board the train until noon")
        dedup = await graduated(await graduate(http, key, second["id"]), 200, "deduplicated")
        assert dedup["article"]["id"] == made["article"]["id"]
        # gated_to_draft: a near-copy of a visible published article becomes a draft only its owner sees
        base = "The staging cluster is rebuilt from scratch every Sunday night at 23:00"
        published = await remember(http, key, text=base)
        await graduated(await graduate(http, key, published["id"]), 201, "created")
        near = await remember(http, key, text=base + ".")
        draft = await graduated(await graduate(http, key, near["id"]), 201, "gated_to_draft")
        assert draft["article"]["status"] == "draft"
        assert (await stamp_of(db, near["id"]))["graduated_at"] is not None  # a durable verdict is stamped

    async def test_unknown_foreign_and_malformed_ids(
        self, http: httpx.AsyncClient, tenant: TenantHandle, new_tenant: NewTenant, db: asyncpg.Connection
    ) -> None:
        key = await tenant.agent("owner")
        memory = await remember(http, key, text="The VPN gateway rotates its certificate every 90 days")
        peer = await tenant.agent("peer")
        stranger = await (await new_tenant()).agent("owner")
        for caller, memory_id in ((key, str(uuid.uuid4())), (peer, memory["id"]), (stranger, memory["id"])):
            response = await graduate(http, caller, memory_id)
            assert_envelope(response, 404, "not_found")
            assert response.json()["error"]["message"] == "no such memory"  # the same for all: no oracle
        assert (await stamp_of(db, memory["id"]))["graduated_at"] is None
        for bad in ("not-a-uuid", "", 42, None, ["x"], memory["id"] + "0"):
            assert_envelope(await graduate(http, key, bad), 422, "invalid_memory_id")
        r = await http.post("/api/v1/memory/graduate", json={}, headers=bearer(key))
        assert_envelope(r, 422, "validation_error")
        for re_scope in ("project", "local", "GLOBAL", 1, True):
            assert_envelope(
                await graduate(http, key, memory["id"], re_scope=re_scope), 422, "validation_error"
            )
        r = await http.post(
            "/api/v1/memory/graduate",
            content=b"{not json",
            headers={**bearer(key), "Content-Type": "application/json"},
        )
        assert_envelope(r, 422, "invalid_json")
        assert (await stamp_of(db, memory["id"]))["graduated_at"] is None
        # a body's tenant / subject is ignored: the key decides whose memory it is
        spoof = await http.post(
            "/api/v1/memory/graduate",
            json={"memory_id": memory["id"], "tenant_id": tenant.id, "subject_id": "owner"},
            headers=bearer(peer),
        )
        assert_envelope(spoof, 404, "not_found")

    async def test_re_scope_global_and_already_graduated_conflicts(
        self, http: httpx.AsyncClient, tenant: TenantHandle, db: asyncpg.Connection
    ) -> None:
        key = await tenant.agent("owner")
        project_id = await project(http, key)
        # a project memory graduates project-scoped; re_scope global afterwards is 409
        scoped = await remember(
            http, key, text="This repository pins Python 3.11 for the build image", project_id=project_id
        )
        made = await graduated(await graduate(http, key, scoped["id"]), 201, "created")
        assert made["article"]["project_id"] == project_id
        assert_envelope(await graduate(http, key, scoped["id"], re_scope="global"), 409, "already_graduated")
        assert (await graduated(await graduate(http, key, scoped["id"]), 200, "already_graduated"))[
            "article"
        ]["id"] == made["article"]["id"]
        # re_scope global on a project memory's first graduation: a tenant-wide article
        widened = await remember(
            http, key, text="Every service in this repo logs in JSON lines", project_id=project_id
        )
        wide = await graduated(await graduate(http, key, widened["id"], re_scope="global"), 201, "created")
        assert wide["article"]["project_id"] is None
        assert (await stamp_of(db, widened["id"]))["graduated_scope"] == "global"
        again = await graduated(
            await graduate(http, key, widened["id"], re_scope="global"), 200, "already_graduated"
        )
        assert again["article"]["id"] == wide["article"]["id"]
        # without re_scope it would be a project article: not the one it has, so 409 too
        assert_envelope(await graduate(http, key, widened["id"]), 409, "already_graduated")
        # a global memory: re_scope global is the same scope, so a no-op 200
        plain = await remember(http, key, text="Code review needs two approvals before merge")
        first = await graduated(await graduate(http, key, plain["id"]), 201, "created")
        same = await graduated(
            await graduate(http, key, plain["id"], re_scope="global"), 200, "already_graduated"
        )
        assert same["article"]["id"] == first["article"]["id"]
        assert [len(await graduated_articles(db, m["id"])) for m in (scoped, widened, plain)] == [1, 1, 1]

    async def test_concurrent_first_graduations_with_different_scopes_have_one_winner(
        self, http: httpx.AsyncClient, tenant: TenantHandle, db: asyncpg.Connection
    ) -> None:
        key = await tenant.agent("owner")
        project_id = await project(http, key)
        outcomes: dict[str, int] = {}
        for attempt in range(12):
            memory = await remember(
                http,
                key,
                text=f"Race {attempt}: the {uuid.uuid4().hex[:10]} service owns the {attempt}th queue",
                project_id=project_id,
            )
            calls = [graduate(http, key, memory["id"]), graduate(http, key, memory["id"], re_scope="global")]
            if attempt % 2:
                calls.reverse()
            responses = await asyncio.gather(*calls)
            statuses = sorted(r.status_code for r in responses)
            assert statuses == [201, 409], [r.text for r in responses]
            winner = next(r for r in responses if r.status_code == 201)
            loser = next(r for r in responses if r.status_code == 409)
            assert_envelope(loser, 409, "already_graduated")
            article = winner.json()["data"]["article"]
            scope = "global" if article["project_id"] is None else "project"
            outcomes[scope] = outcomes.get(scope, 0) + 1
            stamp = await stamp_of(db, memory["id"])
            assert (str(stamp["graduated_article_id"]), stamp["graduated_scope"]) == (article["id"], scope)
            rows = await graduated_articles(db, memory["id"])
            assert [str(r["id"]) for r in rows] == [article["id"]]
        print(f"\nre_scope race winners over 12 runs: {outcomes}")  # noqa: T201

    async def test_gate_unavailable_is_503_stamps_nothing_and_a_retry_succeeds(
        self,
        http: httpx.AsyncClient,
        tenant: TenantHandle,
        admin_key: str,
        db: asyncpg.Connection,
    ) -> None:
        key = await tenant.agent("owner")
        memory = await remember(http, key, text="The data warehouse refreshes its marts every six hours")
        await wait_embedded(http, key, memory["id"])
        # a tenant embedding provider that refuses connections: the gate cannot embed
        await set_embedding_provider(http, admin_key, tenant.id, "http://127.0.0.1:9/v1")
        try:
            for _ in range(2):
                assert_envelope(await graduate(http, key, memory["id"]), 503, "gate_unavailable")
            stamp = await stamp_of(db, memory["id"])
            assert (stamp["graduated_at"], stamp["graduated_article_id"], stamp["graduated_scope"]) == (
                None,
                None,
                None,
            )
            assert await graduated_articles(db, memory["id"]) == []
        finally:
            await set_embedding_provider(http, admin_key, tenant.id, None)
        retried = await graduated(await graduate(http, key, memory["id"]), 201, "created")
        assert str((await stamp_of(db, memory["id"]))["graduated_article_id"]) == retried["article"]["id"]


class TestDurability:
    async def test_killing_the_worker_mid_workflow_completes_with_one_article(
        self,
        http: httpx.AsyncClient,
        tenant: TenantHandle,
        admin_key: str,
        temporal: Client,
        graduation_stack: CairnStack,
        db: asyncpg.Connection,
        fake_embeddings: tuple[FakeEmbeddings, str],
    ) -> None:
        fake, base_url = fake_embeddings
        await set_embedding_provider(http, admin_key, tenant.id, base_url)
        key = await tenant.agent("owner")
        memory = await remember(http, key, text="The payments API rate limit is 300 requests per minute")
        await wait_embedded(http, key, memory["id"])
        fake.stall_next_seconds = 15  # the gate's embedding call hangs: the workflow sits in `propose`
        call = asyncio.create_task(graduate(http, key, memory["id"]))
        await asyncio.wait_for(fake.stalled.wait(), 30)
        workflow_id = graduation_workflow_id(tenant.id, "owner", memory["id"])
        handle = temporal.get_workflow_handle_for(GraduateMemory.run, workflow_id)
        assert (await handle.query(GraduateMemory.progress)).stage == "propose"
        os.kill(graduation_stack.supervisor.pids()["graduation"], signal.SIGKILL)
        call.cancel()
        await graduation_stack.supervisor.stop("graduation")
        await graduation_stack.start_service("graduation", "cairn_graduation", **GRADUATION_ENV)
        outcome = await asyncio.wait_for(handle.result(), 120)
        assert (await handle.describe()).status == WorkflowExecutionStatus.COMPLETED
        assert outcome.verdict in ("created", "duplicate")
        assert fake.calls >= 2  # the lost attempt timed out and the new worker proposed again
        await asyncio.sleep(16)  # let the stalled first call finish inside the knowledge service too
        rows = await graduated_articles(db, memory["id"])
        assert [str(r["id"]) for r in rows] == [outcome.article.id]
        stamp = await stamp_of(db, memory["id"])
        assert str(stamp["graduated_article_id"]) == outcome.article.id
        await graduation_stack.wait_ready()
        again = await graduated(await graduate(http, key, memory["id"]), 200, "already_graduated")
        assert again["article"]["id"] == outcome.article.id


class TestOperations:
    async def test_readiness_includes_the_graduation_worker(
        self, http: httpx.AsyncClient, graduation_stack: CairnStack
    ) -> None:
        ready = await http.get("/readyz")
        assert ready.status_code == 200, ready.text
        assert ready.json()["components"]["graduation"]["status"] == "ok"
        nc = await connect_as(graduation_stack, "gateway")
        try:
            msg = await nc.request("cairn.v1.graduation.health", b"", timeout=2)
        finally:
            await nc.close()
        components = {c["name"]: c["status"] for c in json.loads(msg.data)["components"]}
        assert components == {"postgres": "ok", "temporal": "ok", "worker": "ok"}

    async def test_the_sweep_schedule_exists_with_its_interval(self, temporal: Client) -> None:
        described = await temporal.get_schedule_handle(SWEEP_SCHEDULE_ID).describe()
        intervals = described.schedule.spec.intervals
        assert [i.every.total_seconds() for i in intervals] == [3600]
