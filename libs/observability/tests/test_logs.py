"""The log formats: one JSON object per record with the trace context, tenant and service; no secrets."""

import contextvars
import io
import json
import logging
from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import TracerProvider

from cairn_observability.logs import bind_tenant, configure_logging


@pytest.fixture
def root_handlers() -> Iterator[None]:
    root = logging.getLogger()
    saved, level = list(root.handlers), root.level
    yield
    root.handlers[:] = saved
    root.setLevel(level)


def lines(stream: io.StringIO) -> list[str]:
    """The test's own records: in a full suite, objects another test left behind (an unclosed aiohttp
    session) can be collected mid-test and log through the root handler too."""
    return [line for line in stream.getvalue().splitlines() if "cairn.test" in line]


class TestJsonLines:
    def test_a_record_in_a_span_carries_trace_span_service_and_tenant(self, root_handlers: None) -> None:
        out = io.StringIO()
        configure_logging("memory", "json", "INFO", stream=out)
        tracer = TracerProvider().get_tracer("test")

        def in_request() -> None:
            bind_tenant("tenant-1")
            with tracer.start_as_current_span("request") as span:
                logging.getLogger("cairn.test").info("wrote %d rows", 3, extra={"api_key": "ck_secret"})
                ctx = span.get_span_context()
                self.expected = (format(ctx.trace_id, "032x"), format(ctx.span_id, "016x"))

        contextvars.copy_context().run(in_request)
        [line] = lines(out)
        record = json.loads(line)
        assert record["message"] == "wrote 3 rows"
        assert record["level"] == "INFO"
        assert record["logger"] == "cairn.test"
        assert record["service"] == "memory"
        assert record["tenant_id"] == "tenant-1"
        assert (record["trace_id"], record["span_id"]) == self.expected
        assert record["api_key"] == "[redacted]"
        assert "ck_secret" not in line

    def test_outside_a_request_there_is_no_trace_or_tenant(self, root_handlers: None) -> None:
        out = io.StringIO()
        configure_logging("gateway", "json", "INFO", stream=out)
        contextvars.Context().run(logging.getLogger("cairn.test").warning, "idle")
        record = json.loads(lines(out)[0])
        assert record["service"] == "gateway"
        assert "trace_id" not in record
        assert "tenant_id" not in record

    def test_exceptions_stay_on_one_line(self, root_handlers: None) -> None:
        out = io.StringIO()
        configure_logging("recall", "json", "INFO", stream=out)
        try:
            raise ValueError("boom")
        except ValueError:
            logging.getLogger("cairn.test").exception("failed")
        [line] = lines(out)
        assert "ValueError: boom" in json.loads(line)["exc_info"]


class TestConsole:
    def test_dev_mode_is_one_readable_line(self, root_handlers: None) -> None:
        out = io.StringIO()
        configure_logging("memory", "console", "INFO", stream=out)
        contextvars.Context().run(logging.getLogger("cairn.test").info, "ready")
        [line] = lines(out)
        assert " memory INFO cairn.test: ready" in line
        with pytest.raises(json.JSONDecodeError):
            json.loads(line)
