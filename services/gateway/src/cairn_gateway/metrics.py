"""Prometheus metrics for the gateway, in the default registry (with everything else this process
measures: pool use, usage totals). `route` is the matched route template, never the raw path."""

import time
from collections.abc import Awaitable, Callable

from fastapi import Request, Response
from prometheus_client import REGISTRY, Counter, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

REQUESTS = Counter("cairn_http_requests_total", "HTTP requests", ["method", "route", "status"])
LATENCY = Histogram(
    "cairn_http_request_seconds",
    "HTTP request latency",
    ["method", "route"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)


class GatewayMetrics:
    async def middleware(
        self, request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        start = time.perf_counter()
        response = await call_next(request)
        route = getattr(request.scope.get("route"), "path", "unmatched")
        LATENCY.labels(request.method, route).observe(time.perf_counter() - start)
        REQUESTS.labels(request.method, route, str(response.status_code)).inc()
        return response

    def render(self) -> Response:
        return Response(generate_latest(REGISTRY), media_type=CONTENT_TYPE_LATEST)
