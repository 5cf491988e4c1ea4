"""Cairn telemetry: `setup_telemetry` once per process (logs, metrics' service name, tracing)."""

from cairn_observability.logs import bind_tenant, configure_logging
from cairn_observability.metrics import set_service
from cairn_observability.settings import TelemetrySettings
from cairn_observability.tracing import setup_tracing, shutdown_tracing


def setup_telemetry(service: str, settings: TelemetrySettings) -> None:
    """JSON (or console) logs, the process's service label, and tracing if an OTLP endpoint is set."""
    configure_logging(service, settings.log_format, settings.log_level)
    set_service(service)
    setup_tracing(service, settings)


__all__ = ["TelemetrySettings", "bind_tenant", "setup_telemetry", "shutdown_tracing"]
