"""Every process's own HTTP port: `/healthz` (alive), `/readyz` (its own dependencies), `/metrics`.

Kubernetes probes and Prometheus talk to this port; the gateway serves the same paths on its API port.
`/metrics` is prometheus_client's default REGISTRY, so any module that registers a metric the ordinary
way (`Counter(...)` without a `registry=`) is exported here with no extra wiring.
"""

import asyncio
import logging
import socket
from collections.abc import Sequence

from aiohttp import web
from prometheus_client import REGISTRY, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from cairn_contracts.health import ComponentHealth, HealthReply
from cairn_servicekit.health import HealthCheck

log = logging.getLogger(__name__)


class HttpPort:
    """A tiny aiohttp server on the running loop; not ready until `ready_when` names the checks.

    Started before the slow part of a service's start (model load, Temporal connect), so liveness and
    startup probes see a live process while `/readyz` still answers 503 `starting`.
    """

    def __init__(self, service: str, host: str, port: int) -> None:
        self.service = service
        self._host = host
        self._port = port
        self._checks: Sequence[HealthCheck] | None = None
        self._stopping = False
        self._runner: web.AppRunner | None = None
        self.bound_port: int | None = None

    def ready_when(self, checks: Sequence[HealthCheck]) -> None:
        """From now on `/readyz` is 200 exactly when every check is ok."""
        self._checks = list(checks)

    def stopping(self) -> None:
        """Shutdown began: report not ready so load balancers stop sending work here."""
        self._stopping = True

    async def start(self) -> int:
        app = web.Application()
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/readyz", self._readyz)
        app.router.add_get("/metrics", self._metrics)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        # Bind the socket ourselves so port 0 ("pick a free one") tells us which port it got.
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self._host, self._port))
        site = web.SockSite(self._runner, sock)
        await site.start()
        self.bound_port = int(sock.getsockname()[1])
        log.info("%s HTTP port on %s:%d", self.service, self._host, self.bound_port)
        return self.bound_port

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def report(self) -> HealthReply:
        if self._stopping:
            return _down(self.service, "stopping")
        if self._checks is None:
            return _down(self.service, "starting")
        components = list(await asyncio.gather(*(check() for check in self._checks)))
        status = "ok" if all(c.status == "ok" for c in components) else "down"
        return HealthReply(service=self.service, status=status, components=components)

    async def _healthz(self, _: web.Request) -> web.Response:
        return web.json_response({"status": "ok", "service": self.service})

    async def _readyz(self, _: web.Request) -> web.Response:
        report = await self.report()
        return web.json_response(report.model_dump(), status=200 if report.status == "ok" else 503)

    async def _metrics(self, _: web.Request) -> web.Response:
        return web.Response(body=generate_latest(REGISTRY), headers={"Content-Type": CONTENT_TYPE_LATEST})


def _down(service: str, why: str) -> HealthReply:
    return HealthReply(
        service=service,
        status="down",
        components=[ComponentHealth(name="process", status="down", detail=why)],
    )
