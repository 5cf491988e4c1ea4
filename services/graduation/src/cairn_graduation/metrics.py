"""Metrics of the graduation service. `verdict` is a GraduationVerdict (a closed set)."""

from prometheus_client import Counter

VERDICTS = Counter(
    "cairn_graduation_verdicts_total",
    "Graduation outcomes: the novelty gate's verdict, or already_graduated",
    ["verdict"],
)
