"""Metrics of the promotion service. `status` is a run's final status (promoted, unchanged, noop,
failed) and `path` where a budget was refused (trigger, sweep): closed sets."""

from prometheus_client import Counter, Histogram

RUNS = Counter("cairn_promotion_runs_total", "Promotion runs finished, by final status", ["status"])
BUDGET_REJECTIONS = Counter(
    "cairn_promotion_budget_rejections_total",
    "Promotions refused because the tenant's hourly compile budget was spent",
    ["path"],
)
COMPILE_SECONDS = Histogram(
    "cairn_promotion_compile_seconds",
    "Time to compile one session (the offline compiler or the tenant's LLM)",
    ["outcome"],
    buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120),
)

# Every series of a closed label set exists from the start, so rate() and alerts see zeros, not gaps.
for _status in ("promoted", "unchanged", "noop", "failed"):
    RUNS.labels(_status)
for _path in ("trigger", "sweep"):
    BUDGET_REJECTIONS.labels(_path)
for _outcome in ("ok", "error"):
    COMPILE_SECONDS.labels(_outcome)
