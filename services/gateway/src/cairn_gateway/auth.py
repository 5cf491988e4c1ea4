"""Authentication: a bearer key becomes a KeyIdentity, cached briefly so a lookup is not paid per request."""

import asyncio
import time
from collections import OrderedDict

from cairn_contracts.errors import Unauthenticated
from cairn_gateway.keys import key_hash, looks_like_key
from cairn_gateway.store import IdentityStore
from cairn_scope import KeyIdentity

# One body for missing, malformed, unknown and revoked keys: no oracle telling which.
UNAUTHENTICATED_MESSAGE = "missing or invalid API key"


class KeyCache:
    """A bounded TTL cache from key hash to identity (None caches a miss). Revocation is seen within the TTL."""

    def __init__(self, ttl_seconds: float, max_entries: int = 10_000) -> None:
        self._ttl = ttl_seconds
        self._max = max_entries
        self._entries: OrderedDict[str, tuple[float, KeyIdentity | None]] = OrderedDict()

    def get(self, hashed: str) -> tuple[bool, KeyIdentity | None]:
        entry = self._entries.get(hashed)
        if entry is None or entry[0] < time.monotonic():
            self._entries.pop(hashed, None)
            return False, None
        self._entries.move_to_end(hashed)
        return True, entry[1]

    def put(self, hashed: str, identity: KeyIdentity | None) -> None:
        self._entries[hashed] = (time.monotonic() + self._ttl, identity)
        self._entries.move_to_end(hashed)
        while len(self._entries) > self._max:
            self._entries.popitem(last=False)

    def forget_key(self, key_id: str) -> None:
        for hashed, (_, identity) in list(self._entries.items()):
            if identity is not None and identity.key_id == key_id:
                del self._entries[hashed]


class Authenticator:
    def __init__(self, store: IdentityStore, cache: KeyCache) -> None:
        self._store = store
        self.cache = cache
        # One lookup per key hash at a time: an agent's concurrent requests that find its entry expired
        # share the one query instead of each running it.
        self._lookups: dict[str, asyncio.Task[KeyIdentity | None]] = {}

    async def authenticate(self, authorization: str | None) -> KeyIdentity:
        if not authorization or not authorization.startswith("Bearer "):
            raise Unauthenticated(UNAUTHENTICATED_MESSAGE)
        token = authorization.removeprefix("Bearer ").strip()
        if not looks_like_key(token):
            raise Unauthenticated(UNAUTHENTICATED_MESSAGE)
        hashed = key_hash(token)
        hit, identity = self.cache.get(hashed)
        if not hit:
            identity = await self._lookup(hashed)
        if identity is None:
            raise Unauthenticated(UNAUTHENTICATED_MESSAGE)
        return identity

    async def _lookup(self, hashed: str) -> KeyIdentity | None:
        lookup = self._lookups.get(hashed)
        if lookup is None:
            lookup = asyncio.create_task(self._store.key_identity(hashed))
            self._lookups[hashed] = lookup
            lookup.add_done_callback(lambda done: self._finished(hashed, done))
        return await asyncio.shield(lookup)  # a caller that goes away leaves the lookup to the others

    def _finished(self, hashed: str, lookup: "asyncio.Task[KeyIdentity | None]") -> None:
        if self._lookups.get(hashed) is lookup:
            del self._lookups[hashed]
        if not lookup.cancelled() and lookup.exception() is None:
            self.cache.put(hashed, lookup.result())
