"""Talking to the test stack's bus the way a service does: as a principal's NATS user, with its key."""

from collections.abc import Awaitable, Callable

from nats.aio.client import Client as NATS
from temporalio.client import Client as TemporalClient

from cairn_contracts.bus import PRINCIPALS
from cairn_contracts.envelope import Reply
from cairn_devstack.cairn import CairnStack
from cairn_scope import Scope, ScopeSigner
from cairn_servicekit.bus import connect_nats
from cairn_servicekit.health import connect_temporal
from cairn_servicekit.settings import BusSettings


def caller_of(subject: str) -> str:
    """The first principal allowed to call `subject` (the gateway for everything it routes)."""
    return next(name for name, p in PRINCIPALS.items() if subject in p.calls)


async def connect_as(
    stack: CairnStack, principal: str, error_cb: Callable[[Exception], Awaitable[None]] | None = None
) -> NATS:
    settings = BusSettings(
        nats_url=stack.nats_url,
        nats_user=principal,
        nats_password=stack.secrets.nats_passwords[principal],  # type: ignore[arg-type]
    )
    return await connect_nats(settings, principal, reconnect=False, error_cb=error_cb)


def signer(stack: CairnStack, principal: str) -> ScopeSigner:
    return ScopeSigner.from_setting(stack.secrets.signing_keys[principal])


def signed(stack: CairnStack, scope: Scope, subject: str, body: bytes) -> dict[str, str]:
    """Headers as the subject's caller would send them: one token for this subject and body."""
    return signer(stack, caller_of(subject)).sign(scope, subject, body)


async def ask(stack: CairnStack, subject: str, body: bytes, headers: dict[str, str] | None) -> Reply:
    """One request as the subject's caller (its NATS user), with the given (or no) scope headers."""
    nc = await connect_as(stack, caller_of(subject))
    try:
        msg = await nc.request(subject, body, timeout=10, headers=headers)
    finally:
        await nc.close()
    return Reply.model_validate_json(msg.data)


async def temporal_client(stack: CairnStack) -> TemporalClient:
    """A Temporal client with Cairn's encrypted converter (the stack's payload key)."""
    return await connect_temporal(
        stack.temporal_address, stack.temporal_namespace, stack.secrets.payload_keys
    )


def secret_values(stack: CairnStack) -> list[str]:
    """Every bus secret of the stack (private scope seeds, payload keys, NATS passwords), for leak checks."""
    entries = [*stack.secrets.signing_keys.values(), *stack.secrets.payload_keys.split(",")]
    return [entry.split("=", 1)[1] for entry in entries] + list(stack.secrets.nats_passwords.values())
