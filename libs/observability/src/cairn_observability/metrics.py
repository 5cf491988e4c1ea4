"""Metrics every Cairn process shares, in prometheus_client's default registry (served on `/metrics`).

Label values are bounded by design: `service` is one of Cairn's process names, `subject` one of the NATS
subject constants a service registered (unknown subjects never reach a handler), `code` `ok` or a stable
error code from `cairn_contracts.errors`, `consumer` a durable consumer name, `activity` an activity
name of a registered worker. Tenant ids never appear here.
"""

import weakref
from collections.abc import Iterator
from typing import TYPE_CHECKING

from prometheus_client import REGISTRY, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)

NATS_REQUESTS = Counter(
    "cairn_nats_requests_total",
    "NATS requests handled, by subject and outcome code",
    ["service", "subject", "code"],
)
NATS_LATENCY = Histogram(
    "cairn_nats_request_seconds",
    "Time from receiving a NATS request to sending its reply",
    ["service", "subject"],
    buckets=LATENCY_BUCKETS,
)
NATS_INFLIGHT = Gauge("cairn_nats_inflight_requests", "NATS requests being handled now", ["service"])
JETSTREAM_REDELIVERIES = Counter(
    "cairn_jetstream_redeliveries_total",
    "JetStream messages delivered again (a worker crashed, nak'ed or timed out before its ack)",
    ["consumer"],
)
ACTIVITIES = Counter(
    "cairn_temporal_activities_total",
    "Temporal activity attempts, by activity and outcome (ok, error)",
    ["activity", "outcome"],
)
ACTIVITY_LATENCY = Histogram(
    "cairn_temporal_activity_seconds",
    "Temporal activity attempt duration",
    ["activity"],
    buckets=LATENCY_BUCKETS,
)
SERVICE_INFO = Gauge("cairn_service_info", "1 for each Cairn process, labelled with its service", ["service"])


class _Process:
    service = "unknown"


def set_service(name: str) -> None:
    """Name this process for the metrics that have no handler-level service (pool use, info)."""
    _Process.service = name
    SERVICE_INFO.labels(name).set(1)


def service_name() -> str:
    return _Process.service


class PoolCollector(Collector):
    """Connection-pool use of every SQLAlchemy engine this process created, summed, read at scrape time."""

    def __init__(self) -> None:
        self._engines: weakref.WeakSet[AsyncEngine] = weakref.WeakSet()

    def track(self, engine: "AsyncEngine") -> None:
        self._engines.add(engine)

    def collect(self) -> Iterator[GaugeMetricFamily]:
        in_use = idle = capacity = 0
        for engine in list(self._engines):
            pool = engine.sync_engine.pool
            checkedout = getattr(pool, "checkedout", None)
            if checkedout is None:  # NullPool and friends keep no connections
                continue
            in_use += checkedout()
            idle += pool.checkedin()  # type: ignore[attr-defined]
            capacity += pool.size() + max(getattr(pool, "_max_overflow", 0), 0)  # type: ignore[attr-defined]
        conns = GaugeMetricFamily(
            "cairn_db_pool_connections", "Pooled PostgreSQL connections by state", labels=["service", "state"]
        )
        conns.add_metric([_Process.service, "in_use"], in_use)
        conns.add_metric([_Process.service, "idle"], idle)
        yield conns
        cap = GaugeMetricFamily(
            "cairn_db_pool_max_connections",
            "Most connections the pools may open (size + overflow)",
            labels=["service"],
        )
        cap.add_metric([_Process.service], capacity)
        yield cap


POOLS = PoolCollector()
REGISTRY.register(POOLS)


def track_engine(engine: "AsyncEngine") -> None:
    POOLS.track(engine)


def declare_consumer(consumer: str) -> None:
    """Export the consumer's redelivery series at 0 from the start (rate() and alerts see no gap)."""
    JETSTREAM_REDELIVERIES.labels(consumer)


def count_redelivery(consumer: str, num_delivered: int) -> None:
    if num_delivered > 1:
        JETSTREAM_REDELIVERIES.labels(consumer).inc()
