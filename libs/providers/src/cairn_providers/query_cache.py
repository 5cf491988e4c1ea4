"""A bounded LRU with a TTL for query embeddings: identical query text skips the model (recall and
knowledge search each keep one).

Entries are keyed by the provider key (`TenantRegistry.for_tenant_keyed`: tenant, provider endpoint and
model) *and* the text, so one tenant's entry can never answer another tenant's query, and a tenant that
switches provider never gets vectors of the old one.
"""

import time
from collections import OrderedDict


class QueryEmbeddingCache:
    def __init__(self, max_entries: int, ttl_seconds: float) -> None:
        self._max = max_entries
        self._ttl = ttl_seconds
        self._entries: OrderedDict[tuple[str, str], tuple[float, list[float]]] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def get(self, provider_key: str, text: str) -> list[float] | None:
        key = (provider_key, text)
        entry = self._entries.get(key)
        if entry is None or entry[0] < time.monotonic():
            self._entries.pop(key, None)
            self.misses += 1
            return None
        self._entries.move_to_end(key)
        self.hits += 1
        return entry[1]

    def put(self, provider_key: str, text: str, vector: list[float]) -> None:
        key = (provider_key, text)
        self._entries[key] = (time.monotonic() + self._ttl, vector)
        self._entries.move_to_end(key)
        while len(self._entries) > self._max:
            self._entries.popitem(last=False)
