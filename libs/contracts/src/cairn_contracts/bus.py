"""Who may do what on the message bus, derived from `subjects`.

One table says which request subjects each process calls and which JetStream subjects it publishes or
consumes; the subjects a service answers follow from the subject names (`cairn.v1.<service>.<op>`). Both
the NATS users' permissions and the authority of each scope-signing key are computed from it, so a new
call is one line here and cannot drift between the broker config and the signature check.
"""

from dataclasses import dataclass
from typing import Final

from cairn_contracts import subjects as s


@dataclass(frozen=True)
class Principal:
    """One kind of process on the bus (every replica shares its NATS user and signing authority).

    Attributes:
        name: the NATS user and the signer name in scope key ids (`<name>.<label>`).
        calls: request subjects it sends (and, if it signs, the only subjects its key may sign for).
        publishes: JetStream subjects it publishes events to.
        consumes: durable consumer names it pulls from on the events stream, with their filter subject.
        manages_stream: creates or updates the events stream at start.
        checks_health: services whose health subject it asks.
        signs_superadmin: its key may sign a superadmin scope (the gateway, and recall forwarding one).
    """

    name: str
    calls: tuple[str, ...] = ()
    publishes: tuple[str, ...] = ()
    consumes: tuple[tuple[str, str], ...] = ()
    manages_stream: bool = False
    checks_health: tuple[str, ...] = ()
    signs_superadmin: bool = False

    @property
    def serves(self) -> tuple[str, ...]:
        """The request subjects this principal answers."""
        return tuple(subject for subject in s.REQUEST_SUBJECTS if s.owner(subject) == self.name)

    @property
    def inbox_prefix(self) -> str:
        """Reply inboxes of this principal: only its own user may subscribe under this prefix."""
        return f"_INBOX_{self.name}"

    def may_sign(self, subject: str, superadmin: bool) -> bool:
        return subject in self.calls and (self.signs_superadmin or not superadmin)


_GATEWAY_CALLS = tuple(
    subject
    for subject in s.REQUEST_SUBJECTS
    # Internal calls between workers and services; no HTTP route reaches them.
    if subject not in (s.MEMORY_PERSIST_PROMOTED, s.KNOWLEDGE_VISIBLE_IDS)
)

PRINCIPALS: Final = {
    p.name: p
    for p in (
        Principal("gateway", calls=_GATEWAY_CALLS, checks_health=s.SERVICES, signs_superadmin=True),
        Principal(
            "memory",
            publishes=(s.MEMORY_CREATED,),
            consumes=((s.RECALL_BUMPS_DURABLE, s.MEMORY_RECALLED),),
            manages_stream=True,
        ),
        Principal("memory-embedder", consumes=((s.EMBEDDER_DURABLE, s.MEMORY_CREATED),), manages_stream=True),
        Principal(
            "recall", calls=(s.KNOWLEDGE_SEARCH,), publishes=(s.MEMORY_RECALLED,), signs_superadmin=True
        ),
        Principal("promotion", calls=(s.MEMORY_PERSIST_PROMOTED, s.KNOWLEDGE_VISIBLE_IDS)),
        Principal("graduation", calls=(s.KNOWLEDGE_GET, s.KNOWLEDGE_PROPOSE)),
        Principal("knowledge"),
    )
}


def signer_of(key_id: str) -> str:
    """The principal a scope key id names: `gateway.2026-12` -> `gateway`."""
    return key_id.split(".", 1)[0]


def signers() -> tuple[str, ...]:
    """Principals that sign scopes (they call services); the others only verify."""
    return tuple(name for name, p in PRINCIPALS.items() if p.calls)


def nats_permissions(principal: Principal) -> dict[str, object]:
    """The nats-server `permissions` block for `principal` (allow lists: anything else is denied)."""
    stream = s.EVENTS_STREAM
    publish: list[str] = [*principal.calls, *principal.publishes]
    publish += [s.health(name) for name in principal.checks_health]
    if principal.manages_stream:
        publish += [f"$JS.API.STREAM.{op}.{stream}" for op in ("CREATE", "UPDATE", "INFO")]
    for durable, _filter in principal.consumes:
        publish += [
            f"$JS.API.CONSUMER.INFO.{stream}.{durable}",
            f"$JS.API.CONSUMER.CREATE.{stream}.{durable}",
            f"$JS.API.CONSUMER.CREATE.{stream}.{durable}.>",
            f"$JS.API.CONSUMER.DURABLE.CREATE.{stream}.{durable}",
            f"$JS.API.CONSUMER.MSG.NEXT.{stream}.{durable}",
            f"$JS.ACK.{stream}.{durable}.>",
            # A message it gives up on goes to its dead-letter subject (the stream is created on start).
            s.dead_letter(durable),
            *(f"$JS.API.STREAM.{op}.{s.DEAD_LETTER_STREAM}" for op in ("CREATE", "UPDATE", "INFO")),
        ]
    subscribe = [f"{principal.inbox_prefix}.>", *principal.serves]
    if principal.serves:
        subscribe.append(s.health(principal.name))
    permissions: dict[str, object] = {
        "publish": {"allow": publish or [f"{principal.inbox_prefix}.none"]},
        "subscribe": {"allow": subscribe},
    }
    if principal.serves:
        # A service may answer the requests it received (one reply each), nothing else on the inboxes.
        permissions["allow_responses"] = True
    return permissions
