"""Picking TCP ports on 127.0.0.1."""

from __future__ import annotations

import random
import socket
from contextlib import ExitStack
from dataclasses import dataclass, fields
from pathlib import Path

from cairn_devstack.errors import PortInUseError

HOST = "127.0.0.1"

_LOWEST_PORT = 15000
_EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
# Every port `free_ports` handed out in this process. A port is released before its server binds it, so
# without this a later draw could pick it again. A bench run once failed with "Cairn not ready after 90s: 404
# page not found", a Go server's answer on the gateway's port: most likely the Temporal UI's port drawn again.
_ISSUED: set[int] = set()


def free_port() -> int:
    """Returns a TCP port on 127.0.0.1 that was free a moment ago.

    The port is released before returning, so another process could still take it; callers start their
    server soon after and get a clear :class:`PortInUseError` or start-up error if that happens.
    """
    return free_ports(1)[0]


def free_ports(count: int) -> list[int]:
    """Returns ``count`` distinct free ports on 127.0.0.1.

    The ports are drawn at random from *below* the kernel's ephemeral range. The kernel hands out ports
    in that range on its own, to every ``bind(port 0)`` and outgoing connection on the machine (Temporal
    alone picks several random ports at start). A port chosen here and released could be taken that way
    in the seconds before our server binds it, but a port outside the range can't.
    All sockets stay bound until every port is chosen, so the ports are distinct; and a port this process
    was given before is not given again (`_ISSUED`), so separate draws for one stack (its backing services,
    then its gateway, then each service's HTTP port) cannot collide while the first holder has not bound yet.
    """
    with ExitStack() as stack:
        ports: list[int] = []
        low, high = _LOWEST_PORT, _ephemeral_start()
        attempts = 0
        while len(ports) < count:
            sock = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            attempts += 1
            if high - low < 1000 or attempts > 200:
                sock.bind((HOST, 0))  # unusual kernel settings: fall back to the kernel's choice
            else:
                port = random.randrange(low, high)
                if port in _ISSUED:
                    continue
                try:
                    sock.bind((HOST, port))
                except OSError:
                    continue
            ports.append(int(sock.getsockname()[1]))
        if len(_ISSUED) + count > (high - low) // 2:
            _ISSUED.clear()  # a long run forgets the oldest draws rather than run out of ports
        _ISSUED.update(ports)
        return ports


def _ephemeral_start() -> int:
    try:
        return int(_EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768  # Linux's default


def ensure_port_free(port: int, what: str) -> None:
    """Raises :class:`PortInUseError` if something already listens on ``127.0.0.1:port``.

    Without this check a health probe could succeed against another developer's server on the same port.

    Args:
        port: The TCP port to check.
        what: Which listener wants the port, for the error message.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        # Servers set SO_REUSEADDR too, so a port left in TIME_WAIT by a stopped server is not "in use".
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((HOST, port))
        except OSError as exc:
            raise PortInUseError(
                f"{what} cannot listen on {HOST}:{port}: {exc.strerror}. Is another stack running? "
                "Stop it or choose other ports."
            ) from exc


@dataclass(frozen=True)
class StackPorts:
    """The TCP ports of the backing services, all bound to 127.0.0.1.

    Attributes:
        postgres: PostgreSQL.
        nats: NATS client port.
        nats_monitor: NATS HTTP monitoring port (``/healthz``).
        temporal: Temporal frontend gRPC port.
        temporal_ui: Temporal Web UI port.
    """

    postgres: int
    nats: int
    nats_monitor: int
    temporal: int
    temporal_ui: int

    @classmethod
    def free(cls) -> StackPorts:
        """Returns five distinct free ports, for tests and throwaway stacks."""
        return cls(*free_ports(len(fields(cls))))

    @classmethod
    def defaults(cls) -> StackPorts:
        """Returns the fixed developer ports.

        They are deliberately not the services' standard ports (5432, 4222, 7233, ...), so a developer's
        own Postgres or Temporal keeps working next to the stack.
        """
        return cls(postgres=55432, nats=54222, nats_monitor=58222, temporal=57233, temporal_ui=58233)
