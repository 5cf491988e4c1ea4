"""A bounded LRU with a TTL for query embeddings: identical query text skips the model."""

import time
from collections import OrderedDict


class QueryEmbeddingCache:
    def __init__(self, max_entries: int, ttl_seconds: float) -> None:
        self._max = max_entries
        self._ttl = ttl_seconds
        self._entries: OrderedDict[str, tuple[float, list[float]]] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def get(self, text: str) -> list[float] | None:
        entry = self._entries.get(text)
        if entry is None or entry[0] < time.monotonic():
            self._entries.pop(text, None)
            self.misses += 1
            return None
        self._entries.move_to_end(text)
        self.hits += 1
        return entry[1]

    def put(self, text: str, vector: list[float]) -> None:
        self._entries[text] = (time.monotonic() + self._ttl, vector)
        self._entries.move_to_end(text)
        while len(self._entries) > self._max:
            self._entries.popitem(last=False)
