"""What every Cairn service shares: settings, the NATS request/reply runtime and its client."""

from cairn_servicekit.client import ServiceClient
from cairn_servicekit.runtime import Handler, NatsService, run_service
from cairn_servicekit.settings import ServiceSettings

__all__ = ["Handler", "NatsService", "ServiceClient", "ServiceSettings", "run_service"]
