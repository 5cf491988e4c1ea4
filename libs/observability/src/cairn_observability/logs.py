"""Logging: one JSON object per line (production) or readable lines (`task up`), each record carrying the
service, the current trace/span ids and, where a request set it, the tenant id."""

import contextvars
import logging
import sys
from typing import IO, Any

from opentelemetry import trace
from pythonjsonlogger.json import JsonFormatter

_tenant: contextvars.ContextVar[str | None] = contextvars.ContextVar("cairn_tenant_id", default=None)

# Never emitted even if a caller passes them as `extra` (a log line is no place for a secret).
_SECRET_FIELDS = frozenset({"authorization", "api_key", "key", "secret", "password", "token", "scope_secret"})


def bind_tenant(tenant_id: str | None) -> None:
    """Tag this task's later log records with the tenant (each request runs in its own task)."""
    _tenant.set(tenant_id)


class ContextFilter(logging.Filter):
    def __init__(self, service: str) -> None:
        super().__init__()
        self._service = service

    def filter(self, record: logging.LogRecord) -> bool:
        record.service = self._service
        record.tenant_id = _tenant.get()
        ctx = trace.get_current_span().get_span_context()
        record.trace_id = format(ctx.trace_id, "032x") if ctx.is_valid else None
        record.span_id = format(ctx.span_id, "016x") if ctx.is_valid else None
        for name in _SECRET_FIELDS & record.__dict__.keys():
            setattr(record, name, "[redacted]")
        return True


class _Json(JsonFormatter):
    def process_log_record(self, log_data: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in log_data.items() if v is not None}


def configure_logging(
    service: str, fmt: str = "json", level: str = "INFO", stream: IO[str] | None = None
) -> None:
    """Replace the root handlers with one stderr (or `stream`) handler in the chosen format."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.addFilter(ContextFilter(service))
    if fmt == "console":
        handler.setFormatter(
            logging.Formatter(
                f"%(asctime)s {service} %(levelname)s %(name)s: %(message)s [trace=%(trace_id)s]"
            )
        )
    else:
        handler.setFormatter(
            _Json(
                "%(asctime)s %(levelname)s %(name)s %(message)s %(service)s %(trace_id)s %(span_id)s %(tenant_id)s",
                rename_fields={"asctime": "time", "levelname": "level", "name": "logger"},
                timestamp=False,
            )
        )
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
