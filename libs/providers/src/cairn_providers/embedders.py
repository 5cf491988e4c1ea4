"""Which embedder a tenant's texts go to: its own OpenAI-compatible provider when configured, else the
deployment default (the local model). One circuit breaker per tenant, so one tenant's broken provider
never opens the circuit for another."""

import time
from collections.abc import Sequence

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from cairn_embeddings import CircuitBreakerEmbedder, Embedder, EmbedderUnavailable, OpenAICompatibleEmbedder
from cairn_providers.config import ProviderConfig, load_providers
from cairn_providers.secrets import SecretBox


class _NoKeyEmbedder:
    """A tenant configured a provider but no usable key: no embedding can be had (recall degrades)."""

    def __init__(self, config: ProviderConfig, dim: int) -> None:
        self._name = f"openai:{config.model}"
        self._dim = dim

    @property
    def name(self) -> str:
        return self._name

    @property
    def dim(self) -> int:
        return self._dim

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        raise EmbedderUnavailable("no_api_key")


class TenantEmbedders:
    """Per-tenant embedder lookup, cached for `ttl_seconds` (a settings change applies within that time)."""

    def __init__(
        self,
        default: Embedder,
        sessionmaker: async_sessionmaker[AsyncSession],
        box: SecretBox | None,
        *,
        dim: int = 384,
        ttl_seconds: float = 30.0,
        failure_threshold: int = 3,
        reset_after_s: float = 30.0,
    ) -> None:
        self.default = default
        self._sm = sessionmaker
        self._box = box
        self._dim = dim
        self._ttl = ttl_seconds
        self._threshold = failure_threshold
        self._reset = reset_after_s
        self._cache: dict[str, tuple[float, ProviderConfig | None, Embedder]] = {}

    async def for_tenant(self, tenant_id: str) -> Embedder:
        cached = self._cache.get(tenant_id)
        if cached is not None and cached[0] > time.monotonic():
            return cached[2]
        async with self._sm() as session:
            config = (await load_providers(session, tenant_id, self._box)).embedding
        if cached is not None and cached[1] == config:
            embedder = cached[2]  # unchanged settings keep their breaker state
        else:
            if cached is not None and cached[2] is not self.default:
                await _close(cached[2])
            embedder = self._build(config)
        self._cache[tenant_id] = (time.monotonic() + self._ttl, config, embedder)
        return embedder

    def _build(self, config: ProviderConfig | None) -> Embedder:
        if config is None:
            return self.default
        if not config.api_key:
            return _NoKeyEmbedder(config, self._dim)
        inner = OpenAICompatibleEmbedder(
            config.base_url, config.api_key, config.model, self._dim, timeout=15.0
        )
        return CircuitBreakerEmbedder(inner, failure_threshold=self._threshold, reset_after_s=self._reset)

    async def close(self) -> None:
        for _, _, embedder in self._cache.values():
            if embedder is not self.default:
                await _close(embedder)
        self._cache.clear()


async def _close(embedder: Embedder) -> None:
    close = getattr(embedder, "close", None)
    if close is not None:
        await close()
