"""NATS request/reply runtime: queue-group subscriptions, signed-scope checks, typed error replies,
a health subject, and a graceful shutdown that finishes in-flight requests."""

import asyncio
import contextlib
import logging
import signal
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from typing import Any, TypeVar

import nats
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from pydantic import BaseModel, ValidationError

from cairn_contracts import subjects
from cairn_contracts.envelope import Reply
from cairn_contracts.errors import CairnError, InternalError, ValidationFailed, validation_code
from cairn_contracts.health import HealthReply
from cairn_scope import Scope, verify_scope
from cairn_servicekit.health import HealthCheck, nats_check
from cairn_servicekit.http_port import HttpPort
from cairn_servicekit.settings import ServiceSettings

log = logging.getLogger(__name__)

Req = TypeVar("Req", bound=BaseModel)
Handler = Callable[[Scope, Any], Awaitable[Reply]]


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
            self._subs.append(await nc.subscribe(subject, queue=group, cb=self._spawn(model, handler)))
        self._subs.append(await nc.subscribe(subjects.health(self.name), queue=group, cb=self._health))
        log.info("%s serving %d subjects", self.name, len(self._routes))

    def _spawn(self, model: type[BaseModel], handler: Handler) -> Callable[[Msg], Awaitable[None]]:
        # nats-py runs one callback at a time per subscription: hand each request to its own task.
        async def on_message(msg: Msg) -> None:
            task = asyncio.create_task(self._dispatch(msg, model, handler))
            self._inflight.add(task)
            task.add_done_callback(self._inflight.discard)

        return on_message

    async def _dispatch(self, msg: Msg, model: type[BaseModel], handler: Handler) -> None:
        try:
            scope = verify_scope(msg.headers, self.settings.scope_secret)
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


async def connect_nats(url: str, name: str) -> NATS:
    """Connect with unbounded reconnects: a NATS restart must not kill a service."""
    return await nats.connect(
        url,
        name=name,
        max_reconnect_attempts=-1,
        reconnect_time_wait=0.5,
        connect_timeout=5,
        allow_reconnect=True,
    )


Setup = Callable[[AsyncExitStack, NATS], Awaitable[NatsService]]


async def run_service(name: str, settings: ServiceSettings, setup: Setup) -> None:
    """Run a service until SIGTERM/SIGINT, then drain: stop taking requests, finish in-flight, close."""
    logging.basicConfig(
        level=settings.log_level, format=f"%(asctime)s {name} %(levelname)s %(name)s: %(message)s"
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with AsyncExitStack() as stack:
        # Up first and down last: probes see a live process through the slow start and the drain.
        port = HttpPort(name, settings.http_host, settings.http_port)
        await port.start()
        stack.push_async_callback(port.stop)
        nc = await connect_nats(settings.nats_url, f"cairn-{name}")
        stack.push_async_callback(nc.drain)
        service = await setup(stack, nc)
        await service.start(nc)
        port.ready_when([nats_check(nc), *service.health_checks])
        log.info("%s ready", name)
        await stop.wait()
        log.info("%s stopping", name)
        port.stopping()
        await service.stop(settings.shutdown_grace_seconds)
    log.info("%s stopped", name)
