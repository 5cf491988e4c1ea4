"""Metrics of the memory service and its embedding worker (no tenant labels: per-tenant numbers are in
`tenant_usage`)."""

from prometheus_client import Counter, Gauge, Histogram

EMBED_BACKLOG = Gauge("cairn_embedding_backlog_rows", "Memories still waiting for their embedding")
EMBED_LAG = Gauge(
    "cairn_embedding_lag_seconds", "Age of the oldest memory still waiting for its embedding (0 when none)"
)
EMBED_BATCH = Histogram(
    "cairn_embedding_batch_seconds",
    "Time to embed and write one tenant's batch of rows",
    buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
)
EMBEDDED_ROWS = Counter("cairn_embedding_rows_total", "Rows the embedding worker wrote a vector for")
EMBED_BURST_WAIT = Counter(
    "cairn_embedding_burst_wait_seconds", "Time the embedding worker held off while a write burst arrived"
)
EMBED_DEFERRED = Counter(
    "cairn_embedding_deferred_total", "Messages nak'ed for later because a tenant's embedder was unavailable"
)
