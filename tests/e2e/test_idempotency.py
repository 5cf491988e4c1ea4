"""Idempotent writes through the gateway: replay, reuse with another body, concurrency, scoping, limits."""

import asyncio
import uuid
from typing import Any

import asyncpg
import httpx

from cairn_devstack.cairn import CairnStack
from conftest import TenantHandle, bearer
from tests.e2e.test_spine import assert_envelope


def keyed(key: str, idem: str) -> dict[str, str]:
    return bearer(key, **{"Idempotency-Key": idem})


async def count_memories(stack: CairnStack, tenant_id: str, text: str) -> int:
    conn = await asyncpg.connect(stack.database_url)
    try:
        value = await conn.fetchval(
            "SELECT count(*) FROM memories WHERE tenant_id = $1 AND text = $2", uuid.UUID(tenant_id), text
        )
    finally:
        await conn.close()
    return int(value)


class TestReplay:
    async def test_same_key_and_body_returns_the_first_response_and_writes_once(
        self, http: httpx.AsyncClient, tenant: TenantHandle, stack: CairnStack
    ) -> None:
        key = await tenant.agent()
        idem = str(uuid.uuid4())
        first = await http.post("/api/v1/memory", json={"text": "replayed fact"}, headers=keyed(key, idem))
        assert first.status_code == 201, first.text
        assert "Idempotent-Replayed" not in first.headers
        # Key order and whitespace do not make it another request.
        again = await http.post(
            "/api/v1/memory",
            content=b'{ "text" :  "replayed fact" }',
            headers={**keyed(key, idem), "Content-Type": "application/json"},
        )
        assert again.status_code == 201
        assert again.headers["Idempotent-Replayed"] == "true"
        assert again.json() == first.json()
        assert await count_memories(stack, tenant.id, "replayed fact") == 1

    async def test_same_key_with_another_body_is_422_and_writes_nothing(
        self, http: httpx.AsyncClient, tenant: TenantHandle, stack: CairnStack
    ) -> None:
        key = await tenant.agent()
        idem = str(uuid.uuid4())
        assert (
            await http.post("/api/v1/memory", json={"text": "a"}, headers=keyed(key, idem))
        ).status_code == 201
        other = await http.post("/api/v1/memory", json={"text": "b"}, headers=keyed(key, idem))
        assert_envelope(other, 422, "idempotency_key_reused")
        assert await count_memories(stack, tenant.id, "b") == 0
        # The same key on another write path is another request too.
        promote = await http.post(
            "/api/v1/memory/promote", json={"session_id": "s"}, headers=keyed(key, idem)
        )
        assert_envelope(promote, 422, "idempotency_key_reused")

    async def test_session_turns_supersede_and_promote_are_idempotent(
        self, http: httpx.AsyncClient, tenant: TenantHandle
    ) -> None:
        key = await tenant.agent()
        turn = {
            "tier": "session",
            "session_id": "s-idem",
            "role": "user",
            "content": "hello",
            "ttl_seconds": 600,
        }
        idem = str(uuid.uuid4())
        for _ in range(3):
            assert (await http.post("/api/v1/memory", json=turn, headers=keyed(key, idem))).status_code == 201
        history = await http.get("/api/v1/sessions/s-idem/history", headers=bearer(key))
        assert len(history.json()["data"]) == 1

        made = await http.post("/api/v1/memory", json={"text": "old"}, headers=bearer(key))
        mid = made.json()["data"]["id"]
        idem = str(uuid.uuid4())
        first = await http.post(
            f"/api/v1/memory/{mid}/supersede", json={"text": "new"}, headers=keyed(key, idem)
        )
        again = await http.post(
            f"/api/v1/memory/{mid}/supersede", json={"text": "new"}, headers=keyed(key, idem)
        )
        assert first.status_code == again.status_code == 201
        assert again.json() == first.json()  # not a 409 "already superseded": the first answer, replayed

        idem = str(uuid.uuid4())
        started = await http.post(
            "/api/v1/memory/promote", json={"session_id": "s-idem"}, headers=keyed(key, idem)
        )
        replay = await http.post(
            "/api/v1/memory/promote", json={"session_id": "s-idem"}, headers=keyed(key, idem)
        )
        assert started.status_code == replay.status_code == 202
        assert replay.json() == started.json()
        assert replay.headers["Idempotent-Replayed"] == "true"


class TestConcurrency:
    async def test_twenty_concurrent_posts_with_one_key_make_one_row(
        self, http: httpx.AsyncClient, tenant: TenantHandle, stack: CairnStack
    ) -> None:
        key = await tenant.agent()
        idem = str(uuid.uuid4())
        text = f"concurrent {uuid.uuid4()}"
        responses = await asyncio.gather(
            *(http.post("/api/v1/memory", json={"text": text}, headers=keyed(key, idem)) for _ in range(20))
        )
        assert [r.status_code for r in responses] == [201] * 20, [r.text for r in responses]
        ids = {r.json()["data"]["id"] for r in responses}
        assert len(ids) == 1
        assert sum(1 for r in responses if "Idempotent-Replayed" not in r.headers) == 1
        assert await count_memories(stack, tenant.id, text) == 1


class TestFailuresAreNotStored:
    async def test_a_failed_write_frees_the_key_for_a_corrected_retry(
        self, http: httpx.AsyncClient, tenant: TenantHandle
    ) -> None:
        key = await tenant.agent()
        idem = str(uuid.uuid4())
        bad = await http.post("/api/v1/memory", json={"text": "   "}, headers=keyed(key, idem))
        assert_envelope(bad, 422, "validation_error")
        # Same key, same (bad) body: runs again and fails again (errors are never replayed as successes).
        assert_envelope(
            await http.post("/api/v1/memory", json={"text": "   "}, headers=keyed(key, idem)),
            422,
            "validation_error",
        )
        # The key was released, so the caller may still use it for the corrected write.
        fixed = await http.post("/api/v1/memory", json={"text": "fixed"}, headers=keyed(key, idem))
        assert fixed.status_code == 201


class TestScoping:
    async def test_keys_never_collide_across_subjects_or_tenants(
        self, http: httpx.AsyncClient, tenant: TenantHandle, new_tenant: Any
    ) -> None:
        other_tenant = await new_tenant()
        keys = [await tenant.agent(), await tenant.agent(), await other_tenant.agent()]
        idem = "shared-key"
        ids = set()
        for n, key in enumerate(keys):
            response = await http.post("/api/v1/memory", json={"text": f"fact {n}"}, headers=keyed(key, idem))
            assert response.status_code == 201, response.text
            assert "Idempotent-Replayed" not in response.headers
            ids.add(response.json()["data"]["id"])
        assert len(ids) == 3

    async def test_key_length_at_and_past_the_edge(
        self, http: httpx.AsyncClient, tenant: TenantHandle
    ) -> None:
        key = await tenant.agent()
        ok = await http.post("/api/v1/memory", json={"text": "edge"}, headers=keyed(key, "k" * 255))
        assert ok.status_code == 201
        too_long = await http.post("/api/v1/memory", json={"text": "edge"}, headers=keyed(key, "k" * 256))
        assert_envelope(too_long, 422, "invalid_idempotency_key")
        spaced = await http.post("/api/v1/memory", json={"text": "edge"}, headers=keyed(key, "has space"))
        assert_envelope(spaced, 422, "invalid_idempotency_key")

    async def test_expired_keys_are_taken_over(
        self, http: httpx.AsyncClient, tenant: TenantHandle, stack: CairnStack
    ) -> None:
        key = await tenant.agent()
        idem = str(uuid.uuid4())
        first = await http.post("/api/v1/memory", json={"text": "day one"}, headers=keyed(key, idem))
        conn = await asyncpg.connect(stack.database_url)
        try:
            await conn.execute(
                "UPDATE idempotency_keys SET expires_at = now() - interval '1 second' WHERE key = $1", idem
            )
        finally:
            await conn.close()
        later = await http.post("/api/v1/memory", json={"text": "day two"}, headers=keyed(key, idem))
        assert later.status_code == 201
        assert later.json()["data"]["id"] != first.json()["data"]["id"]


class TestKnowledgeAndGraduation:
    async def test_propose_and_graduate_replay_their_first_answer(
        self, http: httpx.AsyncClient, tenant: TenantHandle
    ) -> None:
        key = await tenant.agent()
        idem = str(uuid.uuid4())
        article = {
            "title": f"Idempotent article {uuid.uuid4().hex[:6]}",
            "body": "Written once, whatever the retries.",
        }
        first = await http.post("/api/v1/knowledge", json=article, headers=keyed(key, idem))
        assert first.status_code == 201, first.text
        again = await http.post("/api/v1/knowledge", json=article, headers=keyed(key, idem))
        assert (again.status_code, again.headers["Idempotent-Replayed"]) == (201, "true")
        assert again.json() == first.json()  # not a 200 `duplicate`: the first answer itself
        other = await http.post(
            "/api/v1/knowledge", json={**article, "body": "changed"}, headers=keyed(key, idem)
        )
        assert_envelope(other, 422, "idempotency_key_reused")

        made = await http.post(
            "/api/v1/memory", json={"text": "The build cache lives in /var/cache/ci"}, headers=bearer(key)
        )
        body = {"memory_id": made.json()["data"]["id"]}
        idem = str(uuid.uuid4())
        graduated = await http.post("/api/v1/memory/graduate", json=body, headers=keyed(key, idem))
        assert graduated.status_code == 201, graduated.text
        replay = await http.post("/api/v1/memory/graduate", json=body, headers=keyed(key, idem))
        assert (replay.status_code, replay.headers["Idempotent-Replayed"]) == (201, "true")
        assert replay.json() == graduated.json()
