"""A per-tenant object (an embedder, a compiler) built from the tenant's provider settings of one kind."""

import time
from collections.abc import Awaitable, Callable
from typing import Generic, Literal, TypeVar

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from cairn_providers.config import ProviderConfig, load_providers
from cairn_providers.secrets import SecretBox

T = TypeVar("T")
Kind = Literal["embedding", "compiler"]


def provider_key(tenant_id: str, config: ProviderConfig | None) -> str:
    provider = "default" if config is None else f"{config.base_url}\x00{config.model}"
    return f"{tenant_id}\x00{provider}"


class TenantRegistry(Generic[T]):
    """Looks up a tenant's settings at most every `ttl_seconds` (a change applies within that time); unchanged
    settings keep their object (and so its circuit-breaker state). Tenants without settings get `default`."""

    def __init__(
        self,
        kind: Kind,
        default: T,
        build: Callable[[ProviderConfig], T],
        sessionmaker: async_sessionmaker[AsyncSession],
        box: SecretBox | None,
        *,
        ttl_seconds: float,
        close: Callable[[T], Awaitable[None]] | None = None,
    ) -> None:
        self.default = default
        self._kind = kind
        self._build = build
        self._sm = sessionmaker
        self._box = box
        self._ttl = ttl_seconds
        self._close = close
        self._cache: dict[str, tuple[float, ProviderConfig | None, T]] = {}

    async def for_tenant(self, tenant_id: str) -> T:
        return (await self.for_tenant_keyed(tenant_id))[0]

    async def for_tenant_keyed(self, tenant_id: str) -> tuple[T, str]:
        """The tenant's object and a key naming exactly what produced it (the tenant and its provider's
        endpoint and model), for caches of its results: no other tenant, and no other endpoint of this
        tenant, ever shares the key."""
        cached = self._cache.get(tenant_id)
        if cached is not None and cached[0] > time.monotonic():
            return cached[2], provider_key(tenant_id, cached[1])
        async with self._sm() as session:
            config = getattr(await load_providers(session, tenant_id, self._box), self._kind)
        if cached is not None and cached[1] == config:
            value = cached[2]
        else:
            if cached is not None:
                await self._release(cached[2])
            value = self.default if config is None else self._build(config)
        self._cache[tenant_id] = (time.monotonic() + self._ttl, config, value)
        return value, provider_key(tenant_id, config)

    async def _release(self, value: T) -> None:
        if value is not self.default and self._close is not None:
            await self._close(value)

    async def close(self) -> None:
        for _, _, value in self._cache.values():
            await self._release(value)
        self._cache.clear()
