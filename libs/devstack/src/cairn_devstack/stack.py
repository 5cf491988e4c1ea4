"""PostgreSQL, NATS and Temporal together, as children of the calling process."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Self

from cairn_devstack.nats import NatsServer
from cairn_devstack.ports import StackPorts
from cairn_devstack.postgres import PostgresServer
from cairn_devstack.server import BackingServer
from cairn_devstack.supervisor import ProcessSupervisor
from cairn_devstack.temporal import DEFAULT_SEARCH_ATTRIBUTES, TemporalServer

_log = logging.getLogger(__name__)


class BackingStack:
    """The three backing services of Cairn, started and stopped as one.

    Layout of ``data_dir``: ``postgres/``, ``nats/``, ``temporal/`` and ``logs/<name>.log``. Re-using a
    data dir keeps all data (tables, JetStream streams, workflow histories).

    Example:
        >>> async with BackingStack(Path(".cairn"), StackPorts.defaults()) as stack:
        ...     engine = create_async_engine(stack.database_url.replace("postgresql", "postgresql+asyncpg"))
        ...     await stack.supervisor.start("gateway", [...], env=stack.env())
    """

    def __init__(
        self,
        data_dir: Path,
        ports: StackPorts,
        *,
        database: str = "cairn",
        namespace: str = "cairn",
        search_attributes: Mapping[str, str] = DEFAULT_SEARCH_ATTRIBUTES,
        postgres_settings: Mapping[str, str] | None = None,
        start_timeout: float = 90.0,
        nats_authorization: Mapping[str, object] | None = None,
        temporal_ui_codec_endpoint: str | None = None,
    ) -> None:
        """Sets up the servers; nothing runs until :meth:`start`.

        Args:
            data_dir: Root data directory, created if missing and kept across runs.
            ports: Ports to listen on (all on 127.0.0.1).
            database: Application database, created with the ``vector`` extension.
            namespace: Temporal namespace.
            search_attributes: Temporal custom search attributes, name to type.
            postgres_settings: Extra postgres ``-c`` settings (e.g. ``{"fsync": "off"}`` in tests).
            start_timeout: Seconds each server may take to become ready.
            nats_authorization: NATS users and permissions (None: an open NATS, for library tests).
            temporal_ui_codec_endpoint: Remote codec the Temporal UI decodes payloads with.
        """
        self.data_dir = Path(data_dir).absolute()
        self.ports = ports
        self.supervisor = ProcessSupervisor(self.data_dir / "logs")
        self.postgres = PostgresServer(
            self.data_dir / "postgres",
            ports.postgres,
            database=database,
            settings=postgres_settings,
            supervisor=self.supervisor,
            start_timeout=start_timeout,
        )
        self.nats = NatsServer(
            self.data_dir / "nats",
            ports.nats,
            ports.nats_monitor,
            supervisor=self.supervisor,
            start_timeout=start_timeout,
            authorization=nats_authorization,
        )
        self.temporal = TemporalServer(
            self.data_dir / "temporal",
            ports.temporal,
            ports.temporal_ui,
            namespace=namespace,
            search_attributes=search_attributes,
            supervisor=self.supervisor,
            start_timeout=start_timeout,
            ui_codec_endpoint=temporal_ui_codec_endpoint,
        )

    @property
    def servers(self) -> tuple[BackingServer, ...]:
        """The three servers, in start order."""
        return (self.postgres, self.nats, self.temporal)

    @property
    def database_url(self) -> str:
        """``postgresql://postgres@127.0.0.1:<port>/<database>`` (trust auth, no password)."""
        return self.postgres.url

    @property
    def nats_url(self) -> str:
        """``nats://127.0.0.1:<port>``."""
        return self.nats.url

    @property
    def temporal_address(self) -> str:
        """``127.0.0.1:<port>``, for ``temporalio.client.Client.connect``."""
        return self.temporal.address

    @property
    def temporal_ui_url(self) -> str:
        """``http://127.0.0.1:<ui port>``."""
        return self.temporal.ui_url

    @property
    def temporal_namespace(self) -> str:
        """The Temporal namespace created at start."""
        return self.temporal.namespace

    def env(self, prefix: str = "CAIRN_") -> dict[str, str]:
        """Returns the connection settings as environment variables for Cairn services.

        Args:
            prefix: Prefix of every variable name.

        Returns:
            ``{PREFIX}DATABASE_URL``, ``NATS_URL``, ``TEMPORAL_ADDRESS``, ``TEMPORAL_NAMESPACE`` and
            ``TEMPORAL_UI_URL``.
        """
        return {
            f"{prefix}DATABASE_URL": self.database_url,
            f"{prefix}NATS_URL": self.nats_url,
            f"{prefix}TEMPORAL_ADDRESS": self.temporal_address,
            f"{prefix}TEMPORAL_NAMESPACE": self.temporal_namespace,
            f"{prefix}TEMPORAL_UI_URL": self.temporal_ui_url,
        }

    async def start(self) -> None:
        """Runs initdb if needed, then starts the three servers in parallel and waits until all are ready.

        initdb goes first because it is disk-bound and slow on a fresh dir; the starts themselves overlap.

        Raises:
            PortInUseError: A port is taken; nothing was started.
            ProcessStartError: A server failed; everything started so far has been stopped again.
        """
        began = time.monotonic()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        try:
            await asyncio.to_thread(self.postgres.prepare)
            async with asyncio.TaskGroup() as group:
                for server in self.servers:
                    group.create_task(server.start(), name=f"start-{server.name}")
        except BaseException as exc:
            await self.supervisor.stop_all()
            # TaskGroup wraps even a single failure; surface the real error to the caller.
            if isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
                raise exc.exceptions[0] from None
            raise
        _log.info("backing stack ready in %.2f s under %s", time.monotonic() - began, self.data_dir)

    async def stop(self) -> None:
        """Stops everything the supervisor runs (including processes callers added), newest first."""
        await self.supervisor.stop_all()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()
