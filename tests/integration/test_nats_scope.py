"""The NATS surface: services refuse requests whose scope is missing, forged or tampered, and a validly
signed scope still only reaches its own subject's rows."""

import base64
import json
import uuid

import nats
import pytest

from cairn_contracts import subjects
from cairn_contracts.envelope import Reply
from cairn_contracts.identity import Role
from cairn_contracts.memory import ListMemoriesRequest, MemoryIdRequest
from cairn_devstack.cairn import CairnStack
from cairn_scope import SCOPE_HEADER, Scope, sign_scope


async def ask(stack: CairnStack, subject: str, body: bytes, headers: dict[str, str] | None) -> Reply:
    nc = await nats.connect(stack.nats_url)
    try:
        msg = await nc.request(subject, body, timeout=10, headers=headers)
    finally:
        await nc.close()
    return Reply.model_validate_json(msg.data)


SCOPE = Scope(tenant_id=str(uuid.uuid4()), subject_id="agent-a", role=Role.agent, key_id=str(uuid.uuid4()))


@pytest.mark.parametrize(
    "subject", [subjects.MEMORY_LIST, subjects.RECALL_MEMORY, subjects.PROMOTION_PROMOTE]
)
async def test_missing_scope_is_refused(stack: CairnStack, subject: str) -> None:
    reply = await ask(stack, subject, b"{}", None)
    assert reply.error is not None
    assert (reply.error.code, reply.error.status) == ("invalid_scope", 401)


async def test_scope_signed_with_another_secret_is_refused(stack: CairnStack) -> None:
    headers = sign_scope(SCOPE, "not-the-deployment-secret-at-all")
    reply = await ask(stack, subjects.MEMORY_LIST, ListMemoriesRequest().model_dump_json().encode(), headers)
    assert reply.error is not None
    assert reply.error.code == "invalid_scope"


async def test_tampered_subject_is_refused(stack: CairnStack) -> None:
    headers = sign_scope(SCOPE, stack.config.scope_secret)
    payload = json.loads(base64.urlsafe_b64decode(headers[SCOPE_HEADER]))
    payload["subject_id"] = "agent-b"
    headers[SCOPE_HEADER] = base64.urlsafe_b64encode(json.dumps(payload).encode()).decode()
    reply = await ask(stack, subjects.MEMORY_LIST, ListMemoriesRequest().model_dump_json().encode(), headers)
    assert reply.error is not None
    assert reply.error.code == "invalid_scope"


async def test_a_valid_scope_cannot_reach_another_subjects_memory(stack: CairnStack) -> None:
    owner = SCOPE
    headers = sign_scope(owner, stack.config.scope_secret)
    created = await ask(
        stack, subjects.MEMORY_REMEMBER, json.dumps({"text": "nats-level secret"}).encode(), headers
    )
    assert created.error is None, created.error
    memory_id = created.data["id"]
    intruder = owner.model_copy(update={"subject_id": "agent-b"})
    reply = await ask(
        stack,
        subjects.MEMORY_GET,
        MemoryIdRequest(id=memory_id).model_dump_json().encode(),
        sign_scope(intruder, stack.config.scope_secret),
    )
    assert reply.error is not None
    assert (reply.error.code, reply.error.status) == ("not_found", 404)
    listing = await ask(
        stack,
        subjects.MEMORY_LIST,
        ListMemoriesRequest(all_subjects=True).model_dump_json().encode(),
        sign_scope(intruder, stack.config.scope_secret),
    )
    assert listing.data == []  # all_subjects means nothing without a superadmin scope
