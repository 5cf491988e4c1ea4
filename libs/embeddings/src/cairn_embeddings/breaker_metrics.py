"""Circuit-breaker state on `/metrics`: how many breakers of this process are closed, open, half-open.

Breakers exist per tenant (one per tenant with its own provider), so a per-breaker label would carry a
tenant id; counts by state are bounded (three series) and still show "some tenant's provider is down".
"""

from __future__ import annotations

import weakref
from collections import Counter as Tally
from collections.abc import Iterator
from typing import TYPE_CHECKING

from prometheus_client import REGISTRY, Counter
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

if TYPE_CHECKING:
    from cairn_embeddings.breaker import CircuitBreakerEmbedder

OPENED = Counter("cairn_embedding_breaker_opened_total", "Times an embedding circuit breaker opened")


class BreakerCollector(Collector):
    def __init__(self) -> None:
        self._live: weakref.WeakSet[CircuitBreakerEmbedder] = weakref.WeakSet()

    def track(self, breaker: CircuitBreakerEmbedder) -> None:
        self._live.add(breaker)

    def collect(self) -> Iterator[GaugeMetricFamily]:
        states = Tally(b.state for b in list(self._live))
        family = GaugeMetricFamily(
            "cairn_embedding_breakers",
            "Embedding circuit breakers in this process by state",
            labels=["state"],
        )
        for state in ("closed", "open", "half_open"):
            family.add_metric([state], states.get(state, 0))
        yield family


BREAKERS = BreakerCollector()
REGISTRY.register(BREAKERS)
