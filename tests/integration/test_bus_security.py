"""The message bus against someone who reaches the NATS port: no anonymous access, each service's user
confined to its own subjects, captured scope tokens useless, and workers' or verifiers' keys unable to
mint what they do not own."""

import asyncio
import base64
import json
import uuid

import httpx
import nats
import pytest
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.errors import Error as NatsError

from cairn_contracts import subjects
from cairn_contracts.identity import Role
from cairn_contracts.memory import ListMemoriesRequest
from cairn_devstack.bus_secrets import OPERATOR
from cairn_devstack.cairn import CairnStack
from cairn_scope import SCOPE_HEADER, Scope, ScopeSigner
from cairn_servicekit.bus import connect_nats
from cairn_servicekit.settings import BusSettings
from conftest import TenantHandle, bearer
from tests.bus_helpers import ask, connect_as, signer

SCOPE = Scope(tenant_id=str(uuid.uuid4()), subject_id="agent-a", role=Role.agent, key_id=str(uuid.uuid4()))


class Violations:
    """Collects the permission errors the server reports to one connection."""

    def __init__(self) -> None:
        self.errors: list[str] = []

    async def record(self, exc: Exception) -> None:
        self.errors.append(str(exc))

    async def wait_for(self, what: str, timeout: float = 3.0) -> str:
        for _ in range(int(timeout / 0.05)):
            found = [e for e in self.errors if f"permissions violation for {what.lower()}" in e.lower()]
            if found:
                return found[0]
            await asyncio.sleep(0.05)
        raise AssertionError(f"no permissions violation for {what}: {self.errors}")


async def operator(stack: CairnStack) -> NATS:
    """The dev-only debug user with every permission (what `docs/DEVELOPING.md` shows)."""
    password = stack.secrets.nats_passwords[OPERATOR]
    return await nats.connect(stack.nats_url, user=OPERATOR, password=password, allow_reconnect=False)


async def delivered(sub_nc: NATS, subject: str, publisher: NATS) -> bool:
    """Whether a message published on `subject` reaches a plain subscription on `sub_nc`."""
    got: asyncio.Queue[Msg] = asyncio.Queue()
    sub = await sub_nc.subscribe(subject, cb=got.put)
    await sub_nc.flush()
    await asyncio.sleep(0.2)  # the server processes (or refuses) the SUB
    await publisher.publish(subject.replace(">", "probe"), b"probe")
    await publisher.flush()
    try:
        await asyncio.wait_for(got.get(), 1.0)
    except TimeoutError:
        return False
    finally:
        await sub.unsubscribe()
    return True


class TestAuthentication:
    async def test_anonymous_client_is_refused(self, stack: CairnStack) -> None:
        with pytest.raises(NatsError, match="(?i)authorization"):
            await nats.connect(stack.nats_url, allow_reconnect=False, max_reconnect_attempts=0)

    async def test_wrong_password_is_refused(self, stack: CairnStack) -> None:
        settings = BusSettings(nats_url=stack.nats_url, nats_user="memory", nats_password="guessed")  # type: ignore[arg-type]
        with pytest.raises(NatsError, match="(?i)authorization"):
            await connect_nats(settings, "memory", reconnect=False)

    async def test_one_services_password_is_not_anothers(self, stack: CairnStack) -> None:
        password = stack.secrets.nats_passwords["memory"]
        settings = BusSettings(nats_url=stack.nats_url, nats_user="gateway", nats_password=password)  # type: ignore[arg-type]
        with pytest.raises(NatsError, match="(?i)authorization"):
            await connect_nats(settings, "gateway", reconnect=False)


class TestSubjectPermissions:
    @pytest.mark.parametrize(
        ("principal", "subject"),
        [
            ("memory", subjects.RECALL_MEMORY),  # another service's requests
            ("recall", subjects.MEMORY_REMEMBER),
            ("gateway", subjects.MEMORY_REMEMBER),  # a caller cannot listen in on what it calls
            ("knowledge", "_INBOX_gateway.>"),  # another principal's replies
            ("memory-embedder", subjects.EVENTS_SUBJECTS),  # the event stream, read around JetStream
            ("promotion", ">"),
        ],
    )
    async def test_cannot_subscribe_outside_its_subjects(
        self, stack: CairnStack, principal: str, subject: str
    ) -> None:
        violations = Violations()
        nc = await connect_as(stack, principal, error_cb=violations.record)
        op = await operator(stack)
        try:
            assert not await delivered(nc, subject, op)
            await violations.wait_for(f'subscription to "{subject}"')
        finally:
            await nc.close()
            await op.close()

    async def test_its_own_subjects_do_reach_it(self, stack: CairnStack) -> None:
        """The control for the test above: the same probe does arrive where the user may subscribe."""
        violations = Violations()
        nc = await connect_as(stack, "memory", error_cb=violations.record)
        op = await operator(stack)
        try:
            assert await delivered(nc, subjects.MEMORY_REMEMBER, op)
            assert violations.errors == []
        finally:
            await nc.close()
            await op.close()

    @pytest.mark.parametrize(
        ("principal", "subject"),
        [
            ("promotion", subjects.MEMORY_REMEMBER),  # a worker calls only what it needs
            ("knowledge", subjects.MEMORY_PERSIST_PROMOTED),
            ("memory", subjects.MEMORY_RECALLED),  # only recall announces recalls (they bump hotness)
            ("gateway", subjects.KNOWLEDGE_VISIBLE_IDS),  # internal subject, no HTTP route reaches it
        ],
    )
    async def test_cannot_publish_to_a_subject_it_does_not_call(
        self, stack: CairnStack, principal: str, subject: str
    ) -> None:
        violations = Violations()
        nc = await connect_as(stack, principal, error_cb=violations.record)
        op = await operator(stack)
        watch: asyncio.Queue[Msg] = asyncio.Queue()
        await op.subscribe(subject, cb=watch.put)
        await op.flush()
        try:
            await nc.publish(subject, b"{}")
            await nc.flush()
            await violations.wait_for(f'publish to "{subject}"')
            with pytest.raises(TimeoutError):
                await asyncio.wait_for(watch.get(), 0.5)
        finally:
            await nc.close()
            await op.close()

    async def test_a_service_cannot_use_another_services_consumer(self, stack: CairnStack) -> None:
        nc = await connect_as(stack, "recall")
        try:
            js = nc.jetstream(timeout=1.0)
            with pytest.raises((NatsError, TimeoutError)):  # the JetStream API refuses it (times out)
                await js.pull_subscribe(
                    subjects.MEMORY_CREATED, durable=subjects.EMBEDDER_DURABLE, stream=subjects.EVENTS_STREAM
                )
        finally:
            await nc.close()


async def capture_request(stack: CairnStack, subject: str, send: object) -> Msg:
    """Sniff one real request the gateway sends on `subject` while `send` (an awaitable) runs."""
    op = await operator(stack)
    seen: asyncio.Queue[Msg] = asyncio.Queue()
    await op.subscribe(subject, cb=seen.put)
    await op.flush()
    try:
        await send  # type: ignore[misc]
        return await asyncio.wait_for(seen.get(), 5)
    finally:
        await op.close()


class TestCapturedScope:
    async def test_a_captured_scope_header_cannot_be_replayed(
        self, stack: CairnStack, http: httpx.AsyncClient, tenant: TenantHandle
    ) -> None:
        key = await tenant.agent()
        send = http.post("/api/v1/memory", json={"text": "replayable fact"}, headers=bearer(key))
        msg = await capture_request(stack, subjects.MEMORY_REMEMBER, send)
        headers = dict(msg.headers or {})
        assert SCOPE_HEADER in headers
        same = await ask(stack, msg.subject, msg.data, headers)
        assert same.error is not None
        assert (same.error.code, same.error.message) == ("invalid_scope", "scope was already used")
        other_body = json.dumps({"text": "a fact the owner never wrote"}).encode()
        body = await ask(stack, msg.subject, other_body, headers)
        assert body.error is not None
        assert (body.error.code, body.error.message) == (
            "invalid_scope",
            "scope was signed for another message",
        )
        listing = ListMemoriesRequest().model_dump_json().encode()
        other = await ask(stack, subjects.MEMORY_LIST, listing, headers)
        assert other.error is not None
        assert (other.error.code, other.error.message) == (
            "invalid_scope",
            "scope was signed for another message",
        )
        page = await http.get("/api/v1/memory", headers=bearer(key))
        assert [m["text"] for m in page.json()["data"]] == ["replayable fact"]  # nothing was written twice


class TestMinting:
    async def test_a_verify_only_service_holds_no_key_that_mints(self, stack: CairnStack) -> None:
        env = stack.secrets.service_env("memory")
        assert "CAIRN_SCOPE_SIGNING_KEY" not in env
        body = ListMemoriesRequest().model_dump_json().encode()
        for entry in env["CAIRN_SCOPE_VERIFY_KEYS"].split(","):
            forged = ScopeSigner.from_setting(entry)  # a public key used as if it were a private seed
            reply = await ask(
                stack, subjects.MEMORY_LIST, body, forged.sign(SCOPE, subjects.MEMORY_LIST, body)
            )
            assert reply.error is not None
            assert (reply.error.code, reply.error.message) == (
                "invalid_scope",
                "scope signature does not verify",
            )

    async def test_a_workers_key_signs_only_for_the_subjects_it_calls(self, stack: CairnStack) -> None:
        promotion = signer(stack, "promotion")
        body = ListMemoriesRequest(all_subjects=True).model_dump_json().encode()
        reply = await ask(
            stack, subjects.MEMORY_LIST, body, promotion.sign(SCOPE, subjects.MEMORY_LIST, body)
        )
        assert reply.error is not None
        assert reply.error.code == "invalid_scope"
        assert "promotion may not sign" in reply.error.message

    async def test_a_workers_key_cannot_sign_superadmin(self, stack: CairnStack) -> None:
        admin = SCOPE.model_copy(update={"role": Role.superadmin})
        body = b"{}"
        headers = signer(stack, "promotion").sign(admin, subjects.KNOWLEDGE_VISIBLE_IDS, body)
        reply = await ask(stack, subjects.KNOWLEDGE_VISIBLE_IDS, body, headers)
        assert reply.error is not None
        assert reply.error.code == "invalid_scope"
        assert "may not sign" in reply.error.message

    async def test_the_signature_header_is_the_only_way_in(self, stack: CairnStack) -> None:
        """A token whose claims were re-encoded (any byte changed) fails even with the real key's signature."""
        body = ListMemoriesRequest().model_dump_json().encode()
        headers = signer(stack, "gateway").sign(SCOPE, subjects.MEMORY_LIST, body)
        claims = json.loads(base64.urlsafe_b64decode(headers[SCOPE_HEADER]))
        claims["scope"]["role"] = "superadmin"
        headers[SCOPE_HEADER] = base64.urlsafe_b64encode(json.dumps(claims).encode()).decode()
        reply = await ask(stack, subjects.MEMORY_LIST, body, headers)
        assert reply.error is not None
        assert (reply.error.code, reply.error.message) == ("invalid_scope", "scope signature does not verify")
