"""NATS request/reply runtime: queue-group subscriptions, signed-scope checks, typed error replies,
a health subject, and a graceful shutdown that finishes in-flight requests."""

import asyncio
import contextlib
import logging
import signal
import time
import uuid
from collections.abc import Awaitable, Callable, Coroutine
from contextlib import AsyncExitStack
from contextvars import ContextVar
from typing import Any, TypeVar

from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from opentelemetry import trace
from opentelemetry.trace import SpanKind
from pydantic import BaseModel, ValidationError

from cairn_contracts import subjects
from cairn_contracts.envelope import WRITE_ID_HEADER, Reply
from cairn_contracts.errors import CairnError, InternalError, ValidationFailed, validation_code
from cairn_contracts.health import HealthReply
from cairn_observability import TelemetrySettings, setup_telemetry, shutdown_tracing
from cairn_observability.logs import bind_tenant
from cairn_observability.metrics import NATS_INFLIGHT, NATS_LATENCY, NATS_REQUESTS
from cairn_observability.propagation import extract
from cairn_observability.tracing import set_scope_attributes, tracer
from cairn_scope import Scope
from cairn_servicekit import eventloop
from cairn_servicekit.bus import connect_nats
from cairn_servicekit.health import HealthCheck, nats_check
from cairn_servicekit.http_port import HttpPort
from cairn_servicekit.settings import ServiceSettings

log = logging.getLogger(__name__)

Req = TypeVar("Req", bound=BaseModel)
Handler = Callable[[Scope, Any], Awaitable[Reply]]

_write_id: ContextVar[uuid.UUID | None] = ContextVar("cairn_write_id", default=None)


def write_id() -> uuid.UUID | None:
    """The idempotent write id of the request being handled (`Cairn-Write-Id`), or None."""
    return _write_id.get()


def _parse_write_id(headers: dict[str, str] | None) -> uuid.UUID | None:
    raw = (headers or {}).get(WRITE_ID_HEADER)
    try:
        return uuid.UUID(raw) if raw else None
    except ValueError:
        return None


def validation_error(exc: ValidationError) -> ValidationFailed:
    """One stable code for a failed model: the named rule if a contract validator raised one."""
    errors = exc.errors(include_url=False)
    first = errors[0] if errors else {"msg": "invalid request", "loc": ()}
    where = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
    message = f"{where}: {first['msg']}" if where else str(first["msg"])
    return ValidationFailed(validation_code([str(e["type"]) for e in errors]), message)


class NatsService:
    """One service's NATS face. Replicas share load through the service's queue group."""

    def __init__(self, name: str, settings: ServiceSettings) -> None:
        self.name = name
        self.settings = settings
        self._routes: dict[str, tuple[type[BaseModel], Handler]] = {}
        self._health_checks: list[HealthCheck] = []
        self._subs: list[Subscription] = []
        self._inflight: set[asyncio.Task[None]] = set()
        self._verifier = settings.scope_verifier()

    def route(
        self, subject: str, model: type[Req]
    ) -> Callable[[Callable[[Scope, Req], Awaitable[Reply]]], Any]:
        """Register a scoped handler for `subject` taking a validated `model`."""

        def register(handler: Callable[[Scope, Req], Awaitable[Reply]]) -> Any:
            self._routes[subject] = (model, handler)
            return handler

        return register

    def health_check(self, check: HealthCheck) -> None:
        self._health_checks.append(check)

    @property
    def health_checks(self) -> list[HealthCheck]:
        return list(self._health_checks)

    async def start(self, nc: NATS) -> None:
        group = subjects.queue_group(self.name)
        for subject, (model, handler) in self._routes.items():
            self._subs.append(
                await nc.subscribe(subject, queue=group, cb=self._spawn(subject, model, handler))
            )
        self._subs.append(await nc.subscribe(subjects.health(self.name), queue=group, cb=self._health))
        log.info("%s serving %d subjects", self.name, len(self._routes))

    def _spawn(
        self, subject: str, model: type[BaseModel], handler: Handler
    ) -> Callable[[Msg], Awaitable[None]]:
        # nats-py runs one callback at a time per subscription: hand each request to its own task.
        async def on_message(msg: Msg) -> None:
            task = asyncio.create_task(self._observed(subject, msg, model, handler))
            self._inflight.add(task)
            task.add_done_callback(self._inflight.discard)

        return on_message

    async def _observed(self, subject: str, msg: Msg, model: type[BaseModel], handler: Handler) -> None:
        """One server span (child of the sender's, from the headers) and the request metrics."""
        start = time.perf_counter()
        inflight = NATS_INFLIGHT.labels(self.name)
        inflight.inc()
        code = "internal_error"
        try:
            with tracer().start_as_current_span(
                f"process {subject}", context=extract(msg.headers), kind=SpanKind.SERVER
            ) as span:
                span.set_attribute("messaging.system", "nats")
                span.set_attribute("messaging.destination.name", subject)
                reply = await self._dispatch(msg, model, handler)
                code = reply.error.code if reply.error is not None else "ok"
                span.set_attribute("cairn.code", code)
        finally:
            inflight.dec()
        NATS_REQUESTS.labels(self.name, subject, code).inc()
        NATS_LATENCY.labels(self.name, subject).observe(time.perf_counter() - start)

    async def _dispatch(self, msg: Msg, model: type[BaseModel], handler: Handler) -> Reply:
        try:
            scope = self._verifier.verify(msg.headers, msg.subject, msg.data)
            _observe_scope(scope)
            _write_id.set(_parse_write_id(msg.headers))  # this task's own context: one per request
            try:
                request = model.model_validate_json(msg.data)
            except ValidationError as exc:
                raise validation_error(exc) from None
            reply = await handler(scope, request)
        except CairnError as exc:
            reply = Reply(error=exc.body())
        except Exception:
            log.exception("%s: unhandled error on %s", self.name, msg.subject)
            reply = Reply(error=InternalError().body())
        with contextlib.suppress(Exception):
            await msg.respond(reply.model_dump_json().encode())
        return reply

    async def _health(self, msg: Msg) -> None:
        components = [await check() for check in self._health_checks]
        status = "ok" if all(c.status == "ok" for c in components) else "down"
        body = HealthReply(service=self.name, status=status, components=components)
        with contextlib.suppress(Exception):
            await msg.respond(body.model_dump_json().encode())

    async def stop(self, grace_seconds: float) -> None:
        """Stop taking requests, then let in-flight ones finish (bounded by the grace period)."""
        # drain(), not unsubscribe(): messages already delivered to this replica are still handled.
        for sub in self._subs:
            with contextlib.suppress(Exception):
                await sub.drain()  # type: ignore[no-untyped-call]  # nats-py leaves drain() unannotated
        if self._inflight:
            await asyncio.wait(self._inflight, timeout=grace_seconds)


def _observe_scope(scope: Scope) -> None:
    """The verified scope on the current span and on this request's log records."""
    set_scope_attributes(trace.get_current_span(), scope.tenant_id, scope.subject_id)
    bind_tenant(scope.tenant_id)


Setup = Callable[[AsyncExitStack, NATS], Awaitable[NatsService]]


async def run_service(name: str, settings: ServiceSettings, setup: Setup) -> None:
    """Run a service until SIGTERM/SIGINT, then drain: stop taking requests, finish in-flight, close."""
    setup_telemetry(name, TelemetrySettings(log_level=settings.log_level))
    eventloop.single_threaded_blas()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with AsyncExitStack() as stack:
        # Up first and down last: probes see a live process through the slow start and the drain.
        port = HttpPort(name, settings.http_host, settings.http_port)
        await port.start()
        stack.push_async_callback(port.stop)
        nc = await connect_nats(settings, name)
        stack.push_async_callback(nc.drain)
        service = await setup(stack, nc)
        await service.start(nc)
        eventloop.settle_gc()
        port.ready_when([nats_check(nc), *service.health_checks])
        log.info("%s ready", name)
        await stop.wait()
        log.info("%s stopping", name)
        port.stopping()
        await service.stop(settings.shutdown_grace_seconds)
    shutdown_tracing()
    log.info("%s stopped", name)


def run_in_background(stack: AsyncExitStack, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
    """Start `coro` as a task that `stack` cancels (and awaits) when it closes."""
    task = asyncio.create_task(coro)

    async def cancel() -> None:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    stack.push_async_callback(cancel)
    return task
