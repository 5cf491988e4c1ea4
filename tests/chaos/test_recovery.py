"""Crashes and outages one at a time: a killed service comes back by itself, the embedding worker rides
out a database or NATS outage without a restart, and a poison message is dead-lettered, not looped."""

import asyncio
import os
import signal
import time
import uuid

import asyncpg
import httpx
import pytest
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy, StreamConfig
from prometheus_client import REGISTRY

from cairn_contracts import subjects
from cairn_contracts.dead_letter import DeadLetter, DeadLetterReason
from cairn_contracts.memory import MemoryCreated
from cairn_devstack.cairn import CairnStack
from cairn_servicekit.consumer import DeadLetters, Redelivery, durable_pull, fetch_batch
from conftest import bearer
from tests.chaos.helpers import new_agent, operator_nats

pytestmark = pytest.mark.timeout(180)


async def write(http: httpx.AsyncClient, key: str, text: str) -> str:
    r = await http.post("/api/v1/memory", json={"text": text}, headers=bearer(key))
    assert r.status_code == 201, r.text
    return str(r.json()["data"]["id"])


async def wait_embedded(db: asyncpg.Connection, ids: list[str], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    wanted = [uuid.UUID(i) for i in ids]
    while time.monotonic() < deadline:
        done = await db.fetchval(
            "SELECT count(*) FROM memories WHERE id = ANY($1) AND embedding_content_hash IS NOT NULL", wanted
        )
        if done == len(ids):
            return
        await asyncio.sleep(0.2)
    raise AssertionError(f"only {done} of {len(ids)} rows embedded after {timeout} s")


async def wait_new_pid(stack: CairnStack, name: str, old: int, timeout: float = 30) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pid = stack.supervisor.pids().get(name)
        if pid is not None and pid != old:
            return pid
        await asyncio.sleep(0.05)
    raise AssertionError(f"{name} was not restarted within {timeout} s")


async def wait_status(
    http: httpx.AsyncClient, method: str, url: str, key: str, body: object, timeout: float
) -> float:
    """Seconds until the request answers 200."""
    began = time.monotonic()
    while time.monotonic() - began < timeout:
        try:
            r = await http.request(method, url, json=body, headers=bearer(key), timeout=5)
            if r.status_code == 200:
                return time.monotonic() - began
        except httpx.HTTPError:
            pass
        await asyncio.sleep(0.1)
    raise AssertionError(f"{url} did not answer 200 within {timeout} s")


class TestLauncherRestarts:
    @pytest.mark.parametrize("name", ["recall", "gateway"])
    async def test_a_sigkilled_service_comes_back_and_serves(
        self, chaos_stack: CairnStack, chaos_http: httpx.AsyncClient, chaos_admin: str, name: str
    ) -> None:
        _, key = await new_agent(chaos_http, chaos_admin)
        await write(chaos_http, key, "the launcher brings crashed services back")
        old = chaos_stack.supervisor.pids()[name]
        restarts = chaos_stack.supervisor.restarts.get(name, 0)
        os.kill(old, signal.SIGKILL)
        await wait_new_pid(chaos_stack, name, old)
        await wait_status(chaos_http, "POST", "/api/v1/memory/recall", key, {"query": "launcher"}, 60)
        # The launcher counts a restart once its own readiness probe passes, which can be a poll after the
        # new process first answers a request.
        deadline = time.monotonic() + 30
        while chaos_stack.supervisor.restarts.get(name, 0) == restarts and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert chaos_stack.supervisor.restarts.get(name, 0) == restarts + 1
        log = chaos_stack.supervisor.log_path(name).read_text()
        assert f"supervisor: {name} exited with code -9; restarting in" in log


class TestWorkerSurvivesOutages:
    @pytest.mark.parametrize("backing", ["postgres", "nats"])
    async def test_rows_written_after_the_outage_are_embedded_by_the_same_worker(
        self,
        chaos_stack: CairnStack,
        chaos_http: httpx.AsyncClient,
        chaos_admin: str,
        chaos_db: asyncpg.Connection,
        backing: str,
    ) -> None:
        tenant_id, key = await new_agent(chaos_http, chaos_admin)
        before = [await write(chaos_http, key, f"written before the {backing} outage")]
        await wait_embedded(chaos_db, before)
        worker = chaos_stack.supervisor.pids()["memory-embedder"]
        log_size = chaos_stack.supervisor.log_path("memory-embedder").stat().st_size
        await chaos_db.close()
        assert chaos_stack.backing is not None
        server = chaos_stack.backing.postgres if backing == "postgres" else chaos_stack.backing.nats
        await server.stop()  # a deliberate stop: the launcher leaves it down
        if backing == "postgres":
            # The worker is handed work while the database is away, so it must fail and retry, not idle.
            nc = await operator_nats(chaos_stack)
            event = MemoryCreated(memory_id=str(uuid.uuid4()), tenant_id=tenant_id)
            await nc.jetstream().publish(subjects.MEMORY_CREATED, event.model_dump_json().encode())
            await nc.close()
        await asyncio.sleep(4)  # several fetch / sweep rounds against the missing server
        await server.restart()
        await chaos_stack.wait_ready(timeout=60)
        after = [
            await write_retrying(chaos_http, key, f"written after the {backing} outage, number {i}")
            for i in range(5)
        ]
        db = await asyncpg.connect(chaos_stack.database_url)
        try:
            await wait_embedded(db, after)
        finally:
            await db.close()
        assert chaos_stack.supervisor.pids()["memory-embedder"] == worker  # the same process, never restarted
        with chaos_stack.supervisor.log_path("memory-embedder").open("rb") as fh:
            fh.seek(log_size)
            tail = fh.read().decode(errors="replace")
        if backing == "postgres":
            assert "redelivering with backoff" in tail or "embedding sweep failed" in tail, tail[-3000:]


async def write_retrying(http: httpx.AsyncClient, key: str, text: str, timeout: float = 30) -> str:
    """A write right after an outage may meet a pooled connection the restart broke: retry it once more."""
    deadline = time.monotonic() + timeout
    idempotency_key = uuid.uuid4().hex
    while True:
        r = await http.post(
            "/api/v1/memory", json={"text": text}, headers=bearer(key, **{"Idempotency-Key": idempotency_key})
        )
        if r.status_code == 201 or time.monotonic() > deadline:
            assert r.status_code == 201, r.text
            return str(r.json()["data"]["id"])
        await asyncio.sleep(0.3)


class TestDeadLetters:
    async def test_a_poison_row_is_dead_lettered_and_its_batch_mates_are_embedded(
        self,
        chaos_stack: CairnStack,
        chaos_http: httpx.AsyncClient,
        chaos_admin: str,
        chaos_db: asyncpg.Connection,
    ) -> None:
        tenant_id, key = await new_agent(chaos_http, chaos_admin)
        poison_text = f"poison {uuid.uuid4()}"
        fn = f"chaos_poison_{uuid.uuid4().hex[:8]}"
        # Every attempt to store this row's vector fails, the way a row the embedder chokes on would.
        await chaos_db.execute(f"""
            CREATE FUNCTION {fn}() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN RAISE EXCEPTION 'poison row'; END $$;
            CREATE TRIGGER {fn} BEFORE UPDATE OF embedding ON memories
            FOR EACH ROW WHEN (NEW.text = '{poison_text}') EXECUTE FUNCTION {fn}();
        """)
        nc = await operator_nats(chaos_stack)
        try:
            js = nc.jetstream()
            seen = await js.pull_subscribe(
                subjects.dead_letter("memory-embedder"),
                stream=subjects.DEAD_LETTER_STREAM,
                config=ConsumerConfig(deliver_policy=DeliverPolicy.NEW, ack_policy=AckPolicy.NONE),
            )
            poison = await write(chaos_http, key, poison_text)
            good = [
                await write(chaos_http, key, f"a good fact after the poison, number {i}") for i in range(5)
            ]
            await wait_embedded(chaos_db, good)
            letters = []
            deadline = time.monotonic() + 60
            while not any(poison in letter.data.decode() for letter in letters):
                assert time.monotonic() < deadline, [
                    line
                    for line in chaos_stack.supervisor.log_path("memory-embedder").read_text().splitlines()
                    if "sweep" not in line and "WARNING" in line or "ERROR" in line
                ]
                letters += [DeadLetter.model_validate_json(m.data) for m in await fetch_batch(seen, 10, 1.0)]
            letter = next(letter for letter in letters if poison in letter.data.decode())
            assert letter.consumer == "memory-embedder"
            assert letter.reason == DeadLetterReason.max_deliveries
            assert letter.deliveries == 4
            assert MemoryCreated.model_validate_json(letter.data).tenant_id == tenant_id
            assert "poison row" in letter.error
            # The loop went on: a write after the dead letter is embedded too.
            await wait_embedded(chaos_db, [await write(chaos_http, key, "a fact after the dead letter")])
        finally:
            await nc.close()
            await chaos_db.execute(f"DROP TRIGGER {fn} ON memories; DROP FUNCTION {fn}();")
        # Dead-lettered is not lost: with the cause gone, the sweep embeds the row.
        await wait_embedded(chaos_db, [poison])

    async def test_the_helper_bounds_deliveries_counts_and_keeps_consuming(
        self, chaos_stack: CairnStack
    ) -> None:
        """The shared consumer helper, against the stack's real NATS: a message that fails every time is
        tried max_deliver times, republished with its body, counted, and the next message still flows."""
        stream, subject, durable = "CHAOS_DLQ_TEST", "chaos.dlq.test", f"dlq-{uuid.uuid4().hex[:8]}"
        nc = await operator_nats(chaos_stack)
        try:
            js = nc.jetstream()
            await js.add_stream(StreamConfig(name=stream, subjects=["chaos.dlq.>"]))
            redelivery = Redelivery(max_deliver=3, initial_delay=0.1, max_delay=0.2)
            sub = await durable_pull(js, subject, durable, stream, ack_wait=5, redelivery=redelivery)
            info = await js.consumer_info(stream, durable)
            assert info.config.max_deliver == 3
            dead = DeadLetters(js, durable, redelivery)
            letters = await js.pull_subscribe(
                subjects.dead_letter(durable),
                stream=subjects.DEAD_LETTER_STREAM,
                config=ConsumerConfig(ack_policy=AckPolicy.NONE),
            )
            labels = {"consumer": durable, "reason": "max_deliveries"}
            counted = REGISTRY.get_sample_value("cairn_jetstream_dead_letters_total", labels) or 0.0
            await js.publish(subject, b"poison")
            await js.publish(subject, b"good")
            attempts: dict[bytes, int] = {}
            deadline = time.monotonic() + 30
            while attempts.get(b"good", 0) == 0 or attempts.get(b"poison", 0) < 3:
                assert time.monotonic() < deadline, attempts
                for msg in await fetch_batch(sub, 10, 0.5):
                    attempts[msg.data] = attempts.get(msg.data, 0) + 1
                    if msg.data == b"poison":
                        await dead.failed(msg, "always fails")
                    else:
                        await msg.ack()
            await asyncio.sleep(1)  # any further delivery of the poison would arrive now
            assert not await fetch_batch(sub, 10, 0.5)
            assert attempts == {b"poison": 3, b"good": 1}
            [raw] = await fetch_batch(letters, 10, 2.0)
            letter = DeadLetter.model_validate_json(raw.data)
            assert (letter.data, letter.deliveries, letter.subject) == (b"poison", 3, subject)
            assert REGISTRY.get_sample_value("cairn_jetstream_dead_letters_total", labels) == counted + 1
        finally:
            await js.delete_stream(stream)
            await nc.close()
