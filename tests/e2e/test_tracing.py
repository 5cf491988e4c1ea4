"""Tracing end to end: the gateway and the services restarted with OTLP export to a real receiver in this
test (it decodes the exporter's protobuf), then one trace per request across processes and workflows."""

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest

from cairn_devstack.cairn import CairnStack
from cairn_observability.receiver import OtlpReceiver, ReceivedSpan
from cairn_promotion.workflows import PromoteSession
from conftest import TenantHandle, bearer
from tests.bus_helpers import secret_values, temporal_client
from tests.e2e.test_memory import remember
from tests.e2e.test_promotion import FACT_TURNS, add_turns, promote
from tests.e2e.test_recall import wait_embedded

# The processes a write, a recall and a promotion pass through (the embedder and knowledge stay untraced).
TRACED = (("memory", "cairn_memory"), ("recall", "cairn_recall"), ("promotion", "cairn_promotion"))


async def restart(stack: CairnStack, env: dict[str, str]) -> None:
    stack.config.service_env.update(env)
    for name, _ in TRACED:
        await stack.supervisor.stop(name)
    await stack.supervisor.stop("gateway")
    for name, module in TRACED:
        await stack.start_service(name, module)
    await stack.start_gateway()
    await stack.wait_ready()


@pytest.fixture(scope="module")
async def otlp(stack: CairnStack) -> AsyncIterator[OtlpReceiver]:
    with OtlpReceiver() as receiver:
        env = {"CAIRN_OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, "OTEL_BSP_SCHEDULE_DELAY": "100"}
        await restart(stack, env)
        try:
            yield receiver
        finally:
            for name in env:
                stack.config.service_env.pop(name, None)
            await restart(stack, {})


async def trace_of(
    receiver: OtlpReceiver, root: Callable[[ReceivedSpan], bool], done: Callable[[list[ReceivedSpan]], bool]
) -> list[ReceivedSpan]:
    """The trace whose spans include one matching `root`, once `done` holds for it (spans arrive in batches)."""
    spans: list[ReceivedSpan] = []
    for _ in range(200):
        for spans in receiver.traces().values():
            if any(root(s) for s in spans) and done(spans):
                return spans
        await asyncio.sleep(0.1)
    raise AssertionError(f"no complete trace; last: {sorted({(s.service, s.name) for s in spans})}")


def services(spans: list[ReceivedSpan]) -> set[str]:
    return {s.service for s in spans}


def db_spans(spans: list[ReceivedSpan], service: str) -> list[ReceivedSpan]:
    return [
        s for s in spans if s.service == service and s.attributes.get("db.system", "").startswith("postgres")
    ]


def http_root(method: str, route: str) -> Callable[[ReceivedSpan], bool]:
    def match(span: ReceivedSpan) -> bool:
        return (
            span.service == "cairn-gateway" and span.kind == 2 and span.name == f"{method} {route}"
        )  # kind 2: SERVER

    return match


def attribute_strings(spans: list[ReceivedSpan]) -> list[str]:
    out: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, str):
            out.append(value)
        elif isinstance(value, list):
            for v in value:
                walk(v)
        elif isinstance(value, dict):
            for v in value.values():
                walk(v)

    for span in spans:
        walk(span.attributes)
        out.append(span.name)
    return out


def assert_no_secrets(spans: list[ReceivedSpan], *secrets: str) -> None:
    values = attribute_strings(spans)
    for secret in secrets:
        leaks = [v for v in values if secret in v]
        assert not leaks, f"span attributes hold {secret[:12]}...: {leaks[:3]}"


class TestTraces:
    async def test_a_write_is_one_trace_through_gateway_memory_and_the_database(
        self, otlp: OtlpReceiver, http: httpx.AsyncClient, tenant: TenantHandle, stack: CairnStack
    ) -> None:
        key = await tenant.agent()
        text = f"the deploy key rotates on fridays {uuid.uuid4().hex}"
        memory = await remember(http, key, text=text)
        spans = await trace_of(
            otlp,
            http_root("POST", "/api/v1/memory"),
            lambda spans: (
                any(s.name == "process cairn.v1.memory.remember" for s in spans)
                and any(s.name == "send cairn.v1.memory.remember" for s in spans)
                and bool(db_spans(spans, "cairn-memory"))
            ),
        )
        server = [
            s for s in spans if s.service == "cairn-memory" and s.name == "process cairn.v1.memory.remember"
        ]
        assert len(server) == 1
        assert server[0].attributes["cairn.tenant_id"] == tenant.id
        assert server[0].attributes["cairn.subject_id"]
        assert server[0].attributes["cairn.code"] == "ok"
        inserts = [
            s
            for s in db_spans(spans, "cairn-memory")
            if "INSERT INTO memories" in s.attributes.get("db.statement", "")
        ]
        assert inserts, "the INSERT is in the write's trace"
        assert db_spans(spans, "cairn-gateway"), "the gateway's own key lookup / rate limit is traced too"
        # The memory service's span is a child of the gateway's NATS client span (context in the headers).
        sends = {
            s.span_id: s
            for s in spans
            if s.service == "cairn-gateway" and s.name == "send cairn.v1.memory.remember"
        }
        assert server[0].parent_span_id in sends
        assert memory["id"]
        assert_no_secrets(otlp.spans(), key, text, *secret_values(stack))

    async def test_a_recall_is_one_trace_through_the_recall_service(
        self, otlp: OtlpReceiver, http: httpx.AsyncClient, tenant: TenantHandle, stack: CairnStack
    ) -> None:
        key = await tenant.agent()
        text = f"the canary runs in eu-west {uuid.uuid4().hex}"
        await remember(http, key, text=text)
        await wait_embedded(http, key, 1)
        query = f"where does the canary run {uuid.uuid4().hex}"
        r = await http.post("/api/v1/memory/recall", json={"query": query}, headers=bearer(key))
        assert r.status_code == 200, r.text
        spans = await trace_of(
            otlp,
            http_root("POST", "/api/v1/memory/recall"),
            # The process span ends after its database children, so it can arrive in a later batch.
            lambda spans: (
                bool(db_spans(spans, "cairn-recall"))
                and any(s.name == "process cairn.v1.recall.memory" for s in spans)
            ),
        )
        recall = [
            s for s in spans if s.service == "cairn-recall" and s.name == "process cairn.v1.recall.memory"
        ]
        assert len(recall) == 1
        assert recall[0].attributes["cairn.tenant_id"] == tenant.id
        assert_no_secrets(otlp.spans(), key, text, query, *secret_values(stack))

    async def test_a_promotion_trace_runs_trigger_workflow_activities_and_persist(
        self, otlp: OtlpReceiver, http: httpx.AsyncClient, tenant: TenantHandle, stack: CairnStack
    ) -> None:
        key = await tenant.agent()
        await add_turns(http, key, "traced", FACT_TURNS)
        accepted = await promote(http, key, "traced")
        temporal = await temporal_client(stack)
        result = await temporal.get_workflow_handle_for(PromoteSession.run, accepted["workflow_id"]).result()
        assert result.promoted >= 1

        def complete(spans: list[ReceivedSpan]) -> bool:
            names = {s.name for s in spans}
            return {"RunActivity:compile", "RunActivity:persist", "RunActivity:finish_run"} <= names and any(
                s.service == "cairn-memory" and s.name == "process cairn.v1.memory.persist_promoted"
                for s in spans
            )

        spans = await trace_of(otlp, http_root("POST", "/api/v1/memory/promote"), complete)
        names = {s.name for s in spans}
        assert "StartWorkflow:PromoteSession" in names
        assert "RunWorkflow:PromoteSession" in names
        assert {"RunActivity:snapshot", "RunActivity:advance_watermark"} <= names
        assert services(spans) >= {"cairn-gateway", "cairn-promotion", "cairn-memory"}
        persist = [s for s in spans if s.name == "process cairn.v1.memory.persist_promoted"]
        assert persist[0].attributes["cairn.tenant_id"] == tenant.id
        assert db_spans(spans, "cairn-memory"), "the persist's INSERTs are in the promotion's trace"
        assert_no_secrets(otlp.spans(), key, *secret_values(stack), *[c for _, c in FACT_TURNS])
