"""Key lookups on a cache miss (pure logic: the store is a stand-in counting its queries; the real
lookup runs against PostgreSQL in every e2e test)."""

import asyncio

import pytest

from cairn_contracts.errors import Unauthenticated
from cairn_contracts.identity import Role
from cairn_gateway.auth import Authenticator, KeyCache
from cairn_gateway.keys import key_hash, new_key
from cairn_gateway.store import IdentityStore
from cairn_scope import KeyIdentity


class CountingStore(IdentityStore):
    def __init__(self, known: dict[str, KeyIdentity]) -> None:
        self.known = known
        self.queries = 0
        self.release = asyncio.Event()

    async def key_identity(self, hashed: str) -> KeyIdentity | None:
        self.queries += 1
        await self.release.wait()  # every caller arrives while the first lookup is in flight
        return self.known.get(hashed)


async def test_concurrent_misses_of_one_key_share_one_lookup_and_fill_the_cache() -> None:
    key = new_key()
    identity = KeyIdentity(key_id="k1", tenant_id="t1", role=Role.agent, agent_id="a1")
    store = CountingStore({key_hash(key): identity})
    auth = Authenticator(store, KeyCache(ttl_seconds=60))
    callers = [asyncio.create_task(auth.authenticate(f"Bearer {key}")) for _ in range(16)]
    await asyncio.sleep(0)
    store.release.set()
    assert await asyncio.gather(*callers) == [identity] * 16
    assert store.queries == 1
    assert await auth.authenticate(f"Bearer {key}") == identity  # from the cache
    assert store.queries == 1


async def test_an_unknown_key_is_refused_and_a_caller_that_leaves_does_not_cancel_the_lookup() -> None:
    key, other = new_key(), new_key()
    store = CountingStore({})
    auth = Authenticator(store, KeyCache(ttl_seconds=60))
    leaving = asyncio.create_task(auth.authenticate(f"Bearer {key}"))
    staying = asyncio.create_task(auth.authenticate(f"Bearer {key}"))
    await asyncio.sleep(0)
    leaving.cancel()
    store.release.set()
    with pytest.raises(Unauthenticated):
        await staying
    assert store.queries == 1
    with pytest.raises(Unauthenticated):
        await auth.authenticate(f"Bearer {key}")  # the miss is cached too
    assert store.queries == 1
    with pytest.raises(Unauthenticated):
        await auth.authenticate(f"Bearer {other}")
    assert store.queries == 2
