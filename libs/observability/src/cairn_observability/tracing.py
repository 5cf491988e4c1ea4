"""OpenTelemetry tracing: one setup per process, off (no-op tracer) unless an OTLP endpoint is configured.

Spans carry tenant and subject ids (`cairn.tenant_id`, `cairn.subject_id`), never keys or memory text:
FastAPI spans record no headers or bodies, SQLAlchemy spans record the statement with its `$n`
placeholders (never the bound parameters), and NATS spans record the subject only.
"""

from __future__ import annotations

import logging
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind

from cairn_observability.settings import TelemetrySettings

if TYPE_CHECKING:
    from fastapi import FastAPI
    from sqlalchemy.ext.asyncio import AsyncEngine

log = logging.getLogger(__name__)

TRACER_NAME = "cairn"
TENANT_ATTR = "cairn.tenant_id"
SUBJECT_ATTR = "cairn.subject_id"

_provider: Any = None  # the SDK TracerProvider once tracing is on
# One tracer for the process: `trace.get_tracer` reads the environment on every call (2-3% of the gateway's
# CPU per request in a profile with tracing off). Made before `setup_tracing`, it is a proxy that switches to
# the SDK's tracer once the provider is installed.
_TRACER = trace.get_tracer(TRACER_NAME)


def tracing_enabled() -> bool:
    return _provider is not None


def tracer() -> trace.Tracer:
    return _TRACER


def setup_tracing(service: str, settings: TelemetrySettings) -> bool:
    """Install the SDK tracer provider with a batched OTLP/HTTP exporter; True if tracing is now on.

    Also instruments outbound aiohttp calls (embedding and compiler providers).
    """
    global _provider
    if _provider is not None or not settings.tracing_enabled:
        return _provider is not None
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.instrumentation.aiohttp_client import AioHttpClientInstrumentor
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider(resource=Resource.create({SERVICE_NAME: f"cairn-{service}"}))
    endpoint = settings.traces_endpoint()
    exporter = OTLPSpanExporter(endpoint=endpoint) if endpoint else OTLPSpanExporter()
    provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    _provider = provider
    AioHttpClientInstrumentor().instrument(tracer_provider=provider)
    log.info("tracing on: OTLP/HTTP export to %s", endpoint or "the OTEL_EXPORTER_OTLP_* endpoint")
    return True


def shutdown_tracing() -> None:
    """Flush and stop the exporter (spans still queued are sent)."""
    if _provider is not None:
        _provider.shutdown()


def pool_statement(statement: str) -> AbstractContextManager[Span]:
    """A client span for one statement on a plain asyncpg pool (`cairn_storage.pool`), which the engine
    instrumentation never sees; like it, it records the statement text and never its parameters."""
    return tracer().start_as_current_span(
        statement.split(None, 1)[0],
        kind=SpanKind.CLIENT,
        attributes={"db.system": "postgresql", "db.statement": statement},
    )


def instrument_engine(engine: AsyncEngine) -> None:
    """Spans for every statement of `engine` (no-op while tracing is off). Statement parameters are never
    recorded: the instrumentation reads only the statement text, and sqlcommenter stays off."""
    if _provider is None:
        return
    from opentelemetry.instrumentation.sqlalchemy.engine import EngineTracer
    from opentelemetry.metrics import NoOpMeter

    usage = NoOpMeter("cairn").create_up_down_counter("db.client.connections.usage")
    EngineTracer(tracer(), engine.sync_engine, usage, enable_commenter=False)  # type: ignore[no-untyped-call]


def instrument_fastapi(app: FastAPI) -> None:
    """Server spans for every route but the probes and the scrape endpoint (no-op while tracing is off)."""
    if _provider is None:
        return
    from opentelemetry.instrumentation.fastapi import FastAPIInstrumentor

    FastAPIInstrumentor.instrument_app(
        app, tracer_provider=_provider, excluded_urls="/healthz,/readyz,/metrics"
    )


def temporal_interceptors() -> list[Any]:
    """Temporal's own OpenTelemetry interceptor when tracing is on: a client built with it gives its
    workers the same interceptor, so trigger -> workflow -> activities is one trace."""
    if _provider is None:
        return []
    from temporalio.contrib.opentelemetry import TracingInterceptor

    return [TracingInterceptor(tracer())]


def set_scope_attributes(span: Span, tenant_id: str | None, subject_id: str | None) -> None:
    if tenant_id:
        span.set_attribute(TENANT_ATTR, tenant_id)
    if subject_id:
        span.set_attribute(SUBJECT_ATTR, subject_id)
