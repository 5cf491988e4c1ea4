"""Settings every service shares. Built in `__main__`, never at import time."""

from pydantic import field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

PLACEHOLDER_SECRETS = frozenset({"", "changeme", "secret", "dev"})


class ServiceSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CAIRN_", extra="ignore")

    database_url: str = "postgresql://postgres@127.0.0.1:55432/cairn"
    nats_url: str = "nats://127.0.0.1:54222"
    temporal_address: str = "127.0.0.1:57233"
    temporal_namespace: str = "cairn"
    scope_secret: str
    # Encrypts tenants' own provider API keys at rest; without it no tenant provider key can be used.
    provider_secrets_key: str | None = None
    # A tenant's provider settings are re-read after this long (a change applies within it).
    provider_cache_ttl_seconds: float = 30.0
    request_timeout_seconds: float = 10.0
    shutdown_grace_seconds: float = 20.0
    log_level: str = "INFO"
    # Per-tenant usage counters are added to PostgreSQL this often (a crash loses at most this much).
    usage_flush_interval_seconds: float = 10.0
    # The process's own HTTP port (/healthz, /readyz, /metrics); 0 or empty picks a free one.
    http_host: str = "127.0.0.1"
    http_port: int = 0

    @field_validator("http_port", mode="before")
    @classmethod
    def _empty_is_free(cls, value: object) -> object:
        return 0 if value is None or (isinstance(value, str) and not value.strip()) else value

    @field_validator("scope_secret")
    @classmethod
    def _real_secret(cls, value: str) -> str:
        if value.strip().lower() in PLACEHOLDER_SECRETS or len(value) < 16:
            raise ValueError("CAIRN_SCOPE_SECRET must be a real secret of at least 16 characters")
        return value
