"""Token ids seen in the last validity window, so a captured token works at most once per replica."""

import time


class ReplayCache:
    """Remembers ids for `ttl_seconds` (the token validity plus clock skew); older tokens fail the age
    check anyway, so forgetting them then is safe. Entries are kept in arrival order with one common TTL,
    so expiry only ever drops from the front: O(1) amortised per call, memory = request rate x TTL.
    """

    def __init__(self, ttl_seconds: float) -> None:
        self.ttl_seconds = ttl_seconds
        self._expiry: dict[str, float] = {}

    def __len__(self) -> int:
        return len(self._expiry)

    def first_sighting(self, token_id: str, *, now: float | None = None) -> bool:
        """True the first time `token_id` is seen within the TTL (and remember it), False after that."""
        current = now if now is not None else time.time()
        self._evict(current)
        if token_id in self._expiry:
            return False
        self._expiry[token_id] = current + self.ttl_seconds
        return True

    def _evict(self, now: float) -> None:
        # dicts iterate in insertion order and every entry has the same TTL: the oldest expires first.
        while self._expiry:
            oldest = next(iter(self._expiry))
            if self._expiry[oldest] > now:
                return
            del self._expiry[oldest]
