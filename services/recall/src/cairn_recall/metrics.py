"""Metrics of the recall service. `reason` is one of the embedder's failure reasons (a closed set:
circuit_open, provider_error, no_api_key, ...), never free text."""

from prometheus_client import Counter

RECALLS = Counter(
    "cairn_recalls_total",
    "Recalls answered, by strategy (exact, ann, subject_ann, subject_exact, keyword, ilike)",
    ["strategy"],
)
FALLBACKS = Counter(
    "cairn_recall_fallbacks_total", "Recalls that degraded to the keyword fallback, by reason", ["reason"]
)
DEGRADED = Counter(
    "cairn_recall_context_degraded_total",
    "Merged recalls returned degraded, by the half that failed or fell back (memory, knowledge)",
    ["part"],
)
KEYWORD_SIDES = Counter(
    "cairn_recall_keyword_sides_total",
    "Keyword sides of large-subject recalls, by what scored them: copy (this replica's postings) or sql",
    ["source"],
)
HOTNESS_DROPPED = Counter(
    "cairn_hotness_events_dropped_total",
    "memory.recalled events shed because the publish queue was full (hotness is best-effort)",
)

# Every series of a closed label set exists from the start, so rate() and alerts see zeros, not gaps.
for _strategy in ("exact", "ann", "subject_ann", "subject_exact", "keyword", "ilike"):
    RECALLS.labels(_strategy)
for _source in ("copy", "sql"):
    KEYWORD_SIDES.labels(_source)
for _reason in ("circuit_open", "provider_error", "no_api_key"):
    FALLBACKS.labels(_reason)
for _part in ("memory", "knowledge"):
    DEGRADED.labels(_part)
