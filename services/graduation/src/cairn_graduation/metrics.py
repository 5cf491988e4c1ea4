"""Metrics of the graduation service. `verdict` is a GraduationVerdict (a closed set)."""

from prometheus_client import Counter

from cairn_contracts.knowledge import Verdict

VERDICTS = Counter(
    "cairn_graduation_verdicts_total",
    "Graduation outcomes: the novelty gate's verdict, or already_graduated",
    ["verdict"],
)

# The closed label set exists from the start, so rate() and alerts see zeros, not gaps.
for _verdict in [*(v.value for v in Verdict), "already_graduated"]:
    VERDICTS.labels(_verdict)
