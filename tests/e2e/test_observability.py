"""Dashboards and alerts against what the processes really export: after e2e traffic, every metric the
Grafana dashboard and the alert rules name is on some Cairn process's `/metrics`."""

import asyncio
import json
import uuid
from pathlib import Path
from typing import Any

import httpx
import promql_parser
import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from cairn_devstack.cairn import SERVICES, CairnStack
from cairn_promotion.workflows import PromoteSession
from conftest import TenantHandle, bearer
from tests.bus_helpers import temporal_client
from tests.e2e.test_memory import remember
from tests.e2e.test_promotion import FACT_TURNS, add_turns, promote
from tests.e2e.test_recall import wait_embedded

OBSERVABILITY = Path(__file__).resolve().parents[2] / "deploy" / "observability"
# Synthesised by Prometheus itself for every scrape target, never exported by a process.
PROMETHEUS_SYNTHESISED = {"up"}

Sample = tuple[str, dict[str, str], float]


def dashboard_exprs() -> list[str]:
    dashboard = json.loads((OBSERVABILITY / "grafana-dashboard.json").read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    exprs += [v["query"] for v in dashboard["templating"]["list"] if v["type"] == "query"]
    return exprs


def rule_groups() -> list[dict[str, Any]]:
    groups: list[dict[str, Any]] = yaml.safe_load((OBSERVABILITY / "rules.yaml").read_text())["groups"]
    return groups


def alert_exprs() -> list[str]:
    return [rule["expr"] for group in rule_groups() for rule in group["rules"]]


def metric_names(expr: str) -> set[str]:
    """Every series name a PromQL expression selects, from its parsed AST (Grafana's label_values() is
    not PromQL: its argument is the selector)."""
    if expr.startswith("label_values("):
        expr = expr.removeprefix("label_values(").split(",")[0].rstrip(")")
    names: set[str] = set()

    def visit(node: Any) -> None:
        if isinstance(node, promql_parser.VectorSelector) and node.name:
            names.add(node.name)

    promql_parser.walk(promql_parser.parse(expr), visit)
    return names


def referenced() -> set[str]:
    return {name for expr in dashboard_exprs() + alert_exprs() for name in metric_names(expr)}


class TestDefinitions:
    def test_every_expression_parses_and_names_cairn_metrics(self) -> None:
        exprs = dashboard_exprs() + alert_exprs()
        assert len(exprs) > 30
        for expr in exprs:
            names = metric_names(expr)
            assert names, expr
            assert all(n.startswith("cairn_") or n in PROMETHEUS_SYNTHESISED for n in names), expr

    def test_the_prometheus_rule_is_the_rules_file(self) -> None:
        rule = yaml.safe_load((OBSERVABILITY / "prometheus-rule.yaml").read_text())
        assert rule["apiVersion"] == "monitoring.coreos.com/v1"
        assert rule["kind"] == "PrometheusRule"
        assert rule["spec"]["groups"] == rule_groups()

    def test_every_alert_says_what_is_wrong(self) -> None:
        alerts = [r for g in rule_groups() for r in g["rules"]]
        assert len({a["alert"] for a in alerts}) == len(alerts)
        for alert in alerts:
            assert alert["labels"]["severity"] in {"page", "warn", "info"}
            assert alert["annotations"]["summary"]

    def test_the_dashboard_covers_the_issue(self) -> None:
        titles = " ".join(
            p["title"] for p in json.loads((OBSERVABILITY / "grafana-dashboard.json").read_text())["panels"]
        ).lower()
        for topic in (
            "latency",
            "errors",
            "backlog",
            "lag",
            "fallbacks",
            "promotion",
            "graduation",
            "tenants",
        ):
            assert topic in titles, topic

    def test_dead_letters_and_the_scope_backstop_are_watched(self) -> None:
        """Both on the dashboard and behind an alert: a poison message and a refused unscoped query."""
        dashboard = {name for expr in dashboard_exprs() for name in metric_names(expr)}
        alerts = {name for expr in alert_exprs() for name in metric_names(expr)}
        for metric in ("cairn_jetstream_dead_letters_total", "cairn_scope_guard_refusals_total"):
            assert metric in dashboard, metric
            assert metric in alerts, metric
        assert "cairn_scope_maintenance_statements_total" in dashboard


async def scrape(url: str) -> list[Sample]:
    async with httpx.AsyncClient(timeout=10) as client:
        response = await client.get(f"{url}/metrics")
    assert response.status_code == 200, url
    return [
        (s.name, dict(s.labels), s.value)
        for family in text_string_to_metric_families(response.text)
        for s in family.samples
    ]


async def scrape_all(stack: CairnStack) -> dict[str, list[Sample]]:
    urls = {"gateway": stack.gateway_url, **{name: stack.http_url(name) for name, _ in SERVICES}}
    scraped = await asyncio.gather(*(scrape(url) for url in urls.values()))
    return dict(zip(urls, scraped, strict=True))


def total(samples: list[Sample], name: str, **labels: str) -> float:
    return sum(v for n, lab, v in samples if n == name and all(lab.get(k) == w for k, w in labels.items()))


@pytest.fixture(scope="module")
async def traffic(stack: CairnStack, admin_key: str) -> dict[str, str]:
    """Writes, recalls, merged recall, a promotion, a graduation, a budget refusal and a recall fallback."""
    async with httpx.AsyncClient(base_url=stack.gateway_url, timeout=60) as http:
        created = await http.post(
            "/api/v1/tenants", json={"name": f"obs-{uuid.uuid4().hex[:8]}"}, headers=bearer(admin_key)
        )
        tenant = TenantHandle(created.json()["data"]["id"], "obs", http, admin_key)
        key = await tenant.agent()
        memory = await remember(http, key, text="the release train leaves on thursdays")
        await wait_embedded(http, key, 1)
        assert (
            await http.post("/api/v1/memory/recall", json={"query": "release train"}, headers=bearer(key))
        ).is_success
        assert (
            await http.post("/api/v1/recall", json={"query": "when is the release"}, headers=bearer(key))
        ).is_success
        graduated = await http.post(
            "/api/v1/memory/graduate", json={"memory_id": memory["id"]}, headers=bearer(key)
        )
        assert graduated.status_code in {200, 201}, graduated.text
        await add_turns(http, key, "obs", FACT_TURNS)
        accepted = await promote(http, key, "obs")
        temporal = await temporal_client(stack)
        await temporal.get_workflow_handle_for(PromoteSession.run, accepted["workflow_id"]).result()
        patched = await http.patch(
            f"/api/v1/tenants/{tenant.id}", json={"promotion_budget_per_hour": 0}, headers=bearer(admin_key)
        )
        assert patched.status_code == 200, patched.text
        await add_turns(http, key, "obs-2", FACT_TURNS[:2])
        refused = await http.post("/api/v1/memory/promote", json={"session_id": "obs-2"}, headers=bearer(key))
        assert refused.status_code == 429, refused.text
        broken = {"embedding": {"base_url": "http://127.0.0.1:9/v1", "model": "fake"}}
        put = await http.put(f"/api/v1/tenants/{tenant.id}/providers", json=broken, headers=bearer(admin_key))
        assert put.status_code == 200, put.text
        await asyncio.sleep(1.2)  # the provider cache TTL in tests
        fallback = await http.post("/api/v1/memory/recall", json={"query": "release"}, headers=bearer(key))
        assert fallback.json()["meta"]["fallback"] is True
        await asyncio.sleep(1.5)  # usage flush (0.5 s), live-row snapshot and backlog poll (1 s)
        return {"tenant_id": tenant.id}


class TestScrape:
    async def test_every_dashboard_and_alert_metric_is_exported(
        self, stack: CairnStack, traffic: dict[str, str]
    ) -> None:
        scraped = await scrape_all(stack)
        exported = {name for samples in scraped.values() for name, _, _ in samples}
        missing = sorted(referenced() - exported - PROMETHEUS_SYNTHESISED)
        assert not missing, f"named by the dashboard or alerts, exported by no process: {missing}"

    async def test_the_traffic_shows_up_where_it_happened(
        self, stack: CairnStack, traffic: dict[str, str]
    ) -> None:
        scraped = await scrape_all(stack)
        assert (
            total(scraped["gateway"], "cairn_http_requests_total", route="/api/v1/memory", status="201") >= 1
        )
        memory = scraped["memory"]
        assert total(memory, "cairn_nats_requests_total", subject="cairn.v1.memory.remember", code="ok") >= 1
        assert total(memory, "cairn_nats_request_seconds_count", subject="cairn.v1.memory.remember") >= 1
        assert total(memory, "cairn_usage_total", kind="writes") >= 1
        assert total(memory, "cairn_db_pool_max_connections") > 0
        assert total(scraped["memory-embedder"], "cairn_embedding_rows_total") >= 1
        assert total(scraped["memory-embedder"], "cairn_embedding_batch_seconds_count") >= 1
        recall = scraped["recall"]
        assert total(recall, "cairn_recall_fallbacks_total", reason="no_api_key") >= 1
        assert total(recall, "cairn_usage_total", kind="recalls") >= 3
        promotion = scraped["promotion"]
        assert total(promotion, "cairn_promotion_runs_total", status="promoted") >= 1
        assert total(promotion, "cairn_promotion_budget_rejections_total", path="trigger") >= 1
        assert total(promotion, "cairn_promotion_compile_seconds_count", outcome="ok") >= 1
        assert total(promotion, "cairn_temporal_activities_total", activity="compile", outcome="ok") >= 1
        assert total(scraped["graduation"], "cairn_graduation_verdicts_total") >= 1
        for name, _ in SERVICES:
            assert total(scraped[name], "cairn_service_info", service=name) == 1

    async def test_tenant_ids_appear_only_in_the_bounded_top_n_gauge(
        self, stack: CairnStack, traffic: dict[str, str]
    ) -> None:
        scraped = await scrape_all(stack)
        tenant_id = traffic["tenant_id"]
        carrying = {
            name
            for samples in scraped.values()
            for name, labels, _ in samples
            if tenant_id in labels.values()
        }
        assert carrying <= {"cairn_usage_top_tenant"}
