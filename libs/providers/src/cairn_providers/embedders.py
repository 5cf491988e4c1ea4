"""Which embedder a tenant's texts go to: its own OpenAI-compatible provider when configured, else the
deployment default (the local model). One circuit breaker per tenant, so one tenant's broken provider
never opens the circuit for another."""

from collections.abc import Sequence

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from cairn_embeddings import CircuitBreakerEmbedder, Embedder, EmbedderUnavailable, OpenAICompatibleEmbedder
from cairn_providers.config import ProviderConfig
from cairn_providers.registry import TenantRegistry
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


async def _close(embedder: Embedder) -> None:
    close = getattr(embedder, "close", None)
    if close is not None:
        await close()


class TenantEmbedders(TenantRegistry[Embedder]):
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
        def build(config: ProviderConfig) -> Embedder:
            if not config.api_key:
                return _NoKeyEmbedder(config, dim)
            inner = OpenAICompatibleEmbedder(config.base_url, config.api_key, config.model, dim, timeout=15.0)
            return CircuitBreakerEmbedder(
                inner, failure_threshold=failure_threshold, reset_after_s=reset_after_s
            )

        super().__init__(
            "embedding", default, build, sessionmaker, box, ttl_seconds=ttl_seconds, close=_close
        )
