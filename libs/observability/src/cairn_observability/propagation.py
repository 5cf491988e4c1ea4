"""W3C trace context in NATS headers: injected by whoever sends (request/reply and JetStream publishes),
extracted by whoever handles the message, so one trace spans gateway -> services -> database."""

from collections.abc import Mapping
from typing import Protocol

from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from opentelemetry import propagate
from opentelemetry.context import Context
from opentelemetry.trace import Link, SpanKind, get_current_span

from cairn_observability.tracing import set_scope_attributes, tracer


class ScopeLike(Protocol):
    @property
    def tenant_id(self) -> str: ...
    @property
    def subject_id(self) -> str: ...


def inject(headers: dict[str, str]) -> dict[str, str]:
    """Add `traceparent` (and `tracestate`) for the current span to `headers`; a no-op while tracing is off."""
    propagate.inject(headers)
    return headers


def extract(headers: Mapping[str, str] | None) -> Context:
    """The sender's context from a message's headers (an empty context when it carried none)."""
    return propagate.extract(dict(headers or {}))


def link_from(headers: Mapping[str, str] | None) -> Link | None:
    """A span link to the sender's span, for batch consumers that handle many traces at once."""
    ctx = get_current_span(extract(headers)).get_span_context()
    return Link(ctx) if ctx.is_valid else None


async def traced_request(
    nc: NATS, subject: str, payload: bytes, timeout: float, headers: dict[str, str], scope: ScopeLike
) -> Msg:
    """`nc.request` inside a client span whose context travels in the request's headers."""
    with tracer().start_as_current_span(f"send {subject}", kind=SpanKind.CLIENT) as span:
        span.set_attribute("messaging.system", "nats")
        span.set_attribute("messaging.destination.name", subject)
        set_scope_attributes(span, scope.tenant_id, scope.subject_id)
        return await nc.request(subject, payload, timeout=timeout, headers=inject(dict(headers)))
