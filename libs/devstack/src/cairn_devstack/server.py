"""Common lifecycle of one backing server run as a supervised child process."""

from __future__ import annotations

import asyncio
import signal
from abc import ABC, abstractmethod
from pathlib import Path
from types import TracebackType
from typing import ClassVar, Self

from cairn_devstack.ports import ensure_port_free
from cairn_devstack.supervisor import ProcessSupervisor, RestartPolicy


class BackingServer(ABC):
    """A server with a data directory, a command line and a readiness probe.

    Subclasses fill in :meth:`argv`, :meth:`is_ready` and :meth:`listen_ports`, and may override
    :meth:`prepare` (blocking set-up, run in a worker thread) and :meth:`after_ready` (async set-up).

    Use it alone (``async with NatsServer(...) as nats``), or pass a shared supervisor, as
    :class:`~cairn_devstack.stack.BackingStack` does.
    """

    name: ClassVar[str]
    stop_signal: ClassVar[signal.Signals] = signal.SIGTERM
    restart_policy: ClassVar[RestartPolicy | None] = RestartPolicy()
    """A server that dies on its own is started again (same data, ports and probe), with backoff."""

    def __init__(
        self,
        data_dir: Path,
        *,
        supervisor: ProcessSupervisor | None = None,
        start_timeout: float = 60.0,
    ) -> None:
        """Sets up paths; nothing runs until :meth:`start`.

        Args:
            data_dir: Directory owned by this server; kept across restarts.
            supervisor: Supervisor to run the process under; by default a new one logging to
                ``<data_dir>/logs``.
            start_timeout: Seconds the server may take to become ready.
        """
        self.data_dir = Path(data_dir).absolute()
        self.supervisor = supervisor or ProcessSupervisor(self.data_dir / "logs")
        self.start_timeout = start_timeout

    @abstractmethod
    def argv(self) -> list[str]:
        """Returns the command line of the server process."""

    @abstractmethod
    async def is_ready(self) -> bool:
        """Probes the running server once; True when it serves requests."""

    @abstractmethod
    def listen_ports(self) -> dict[str, int]:
        """Returns the TCP ports the server will listen on, by purpose."""

    def child_env(self) -> dict[str, str] | None:
        """Returns the complete environment for the child, or None to inherit this process's."""
        return None

    def user(self) -> str | None:
        """Returns the OS user to run the server as, or None for the current one."""
        return None

    def cwd(self) -> Path:
        """Returns the working directory of the server process."""
        return self.data_dir

    def prepare(self) -> None:
        """Creates the data directory. Blocking; :meth:`start` runs it in a worker thread."""
        self.data_dir.mkdir(parents=True, exist_ok=True)

    async def after_ready(self) -> None:  # noqa: B027 - an optional hook, empty on purpose
        """Runs once after the first successful readiness probe of :meth:`start` (not on restarts)."""

    async def start(self) -> None:
        """Prepares the data directory, starts the process and waits until it is ready.

        Raises:
            PortInUseError: A port is already taken.
            ProcessStartError: The process exited or was not ready within ``start_timeout``.
        """
        for purpose, port in self.listen_ports().items():
            ensure_port_free(port, f"{self.name} ({purpose})")
        await asyncio.to_thread(self.prepare)
        env = self.child_env()
        await self.supervisor.start(
            self.name,
            self.argv(),
            env=env,
            inherit_env=env is None,
            cwd=self.cwd(),
            user=self.user(),
            stop_signal=self.stop_signal,
            ready=self.is_ready,
            ready_timeout=self.start_timeout,
            restart=self.restart_policy,
        )
        await self.after_ready()

    async def stop(self) -> None:
        """Stops the process (graceful signal, then SIGKILL of its group after a timeout); no-op if never started."""
        if self.name in self.supervisor:
            await self.supervisor.stop(self.name)

    async def restart(self) -> None:
        """Restarts the process on the same data and ports and waits until it is ready.

        Unlike ``supervisor.restart(name)``, this runs :meth:`prepare` again between stop and start.
        """
        await self.supervisor.stop(self.name)
        await asyncio.to_thread(self.prepare)
        await self.supervisor.restart(self.name)

    @property
    def pid(self) -> int | None:
        """The pid of the running server process, or None."""
        return self.supervisor.pids().get(self.name)

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()
