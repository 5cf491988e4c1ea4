"""Per-tenant model providers (bring your own key): the tenant's OpenAI-compatible embedding and compiler
endpoints, stored with their API keys encrypted, and the registry that picks each tenant's embedder."""

from cairn_providers.config import ProviderConfig, TenantProviders, load_providers, save_providers
from cairn_providers.embedders import TenantEmbedders
from cairn_providers.query_cache import QueryEmbeddingCache
from cairn_providers.secrets import SecretBox, secret_box

__all__ = [
    "ProviderConfig",
    "QueryEmbeddingCache",
    "SecretBox",
    "TenantEmbedders",
    "TenantProviders",
    "load_providers",
    "save_providers",
    "secret_box",
]
