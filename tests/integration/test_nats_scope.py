"""The NATS surface: services refuse requests whose scope is missing, forged or tampered, and a validly
signed scope still only reaches its own subject's rows."""

import base64
import json
import uuid

import pytest

from cairn_contracts import subjects
from cairn_contracts.identity import Role
from cairn_contracts.memory import ListMemoriesRequest, MemoryIdRequest
from cairn_devstack.cairn import CairnStack
from cairn_scope import SCOPE_HEADER, Scope, ScopeSigner, generate_signing_key
from tests.bus_helpers import ask, signed

SCOPE = Scope(tenant_id=str(uuid.uuid4()), subject_id="agent-a", role=Role.agent, key_id=str(uuid.uuid4()))


@pytest.mark.parametrize(
    "subject", [subjects.MEMORY_LIST, subjects.RECALL_MEMORY, subjects.PROMOTION_PROMOTE]
)
async def test_missing_scope_is_refused(stack: CairnStack, subject: str) -> None:
    reply = await ask(stack, subject, b"{}", None)
    assert reply.error is not None
    assert (reply.error.code, reply.error.status) == ("invalid_scope", 401)


async def test_scope_signed_with_another_key_is_refused(stack: CairnStack) -> None:
    body = ListMemoriesRequest().model_dump_json().encode()
    stranger = ScopeSigner.from_setting(generate_signing_key("gateway.dev1")[0])
    reply = await ask(stack, subjects.MEMORY_LIST, body, stranger.sign(SCOPE, subjects.MEMORY_LIST, body))
    assert reply.error is not None
    assert reply.error.code == "invalid_scope"


async def test_tampered_subject_is_refused(stack: CairnStack) -> None:
    body = ListMemoriesRequest().model_dump_json().encode()
    headers = signed(stack, SCOPE, subjects.MEMORY_LIST, body)
    payload = json.loads(base64.urlsafe_b64decode(headers[SCOPE_HEADER]))
    payload["scope"]["subject_id"] = "agent-b"
    headers[SCOPE_HEADER] = base64.urlsafe_b64encode(json.dumps(payload).encode()).decode()
    reply = await ask(stack, subjects.MEMORY_LIST, body, headers)
    assert reply.error is not None
    assert reply.error.code == "invalid_scope"


async def test_a_valid_scope_cannot_reach_another_subjects_memory(stack: CairnStack) -> None:
    owner = SCOPE
    body = json.dumps({"text": "nats-level secret"}).encode()
    created = await ask(
        stack, subjects.MEMORY_REMEMBER, body, signed(stack, owner, subjects.MEMORY_REMEMBER, body)
    )
    assert created.error is None, created.error
    memory_id = created.data["id"]
    intruder = owner.model_copy(update={"subject_id": "agent-b"})
    get = MemoryIdRequest(id=memory_id).model_dump_json().encode()
    reply = await ask(stack, subjects.MEMORY_GET, get, signed(stack, intruder, subjects.MEMORY_GET, get))
    assert reply.error is not None
    assert (reply.error.code, reply.error.status) == ("not_found", 404)
    everything = ListMemoriesRequest(all_subjects=True).model_dump_json().encode()
    listing = await ask(
        stack, subjects.MEMORY_LIST, everything, signed(stack, intruder, subjects.MEMORY_LIST, everything)
    )
    assert listing.data == []  # all_subjects means nothing without a superadmin scope
