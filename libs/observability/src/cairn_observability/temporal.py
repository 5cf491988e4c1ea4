"""Temporal worker interceptors: activity attempt counts and durations as Prometheus metrics, plus the
SDK's OpenTelemetry interceptor when tracing is on."""

import time
from typing import Any

from temporalio import activity
from temporalio.worker import ActivityInboundInterceptor, ExecuteActivityInput, Interceptor

from cairn_observability.metrics import ACTIVITIES, ACTIVITY_LATENCY
from cairn_observability.tracing import temporal_interceptors


class _ActivityMetrics(ActivityInboundInterceptor):
    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        name = activity.info().activity_type
        start = time.perf_counter()
        outcome = "error"
        try:
            result = await super().execute_activity(input)
            outcome = "ok"
            return result
        finally:
            ACTIVITY_LATENCY.labels(name).observe(time.perf_counter() - start)
            ACTIVITIES.labels(name, outcome).inc()


class ActivityMetricsInterceptor(Interceptor):
    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _ActivityMetrics(next)


def worker_interceptors() -> list[Interceptor]:
    """For `Worker(interceptors=...)`. Tracing comes from the client (connect_temporal) when it is on."""
    return [ActivityMetricsInterceptor()]


__all__ = ["ActivityMetricsInterceptor", "temporal_interceptors", "worker_interceptors"]
