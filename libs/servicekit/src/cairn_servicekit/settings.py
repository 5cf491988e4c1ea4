"""Settings every service shares. Built in `__main__`, never at import time."""

from functools import cached_property
from pathlib import Path

from pydantic import SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from cairn_scope import ScopeSigner, ScopeVerifier


class BusSettings(BaseSettings):
    """How a process reaches NATS: URL, its own user's credentials, optional TLS (`CAIRN_NATS_*`)."""

    model_config = SettingsConfigDict(env_prefix="CAIRN_", extra="ignore")

    nats_url: str = "nats://127.0.0.1:54222"
    # Per-service user/password (the embedded stack generates them), or a `.creds` file (JWT + nkey seed)
    # or an nkey seed file for operator-managed NATS accounts.
    nats_user: str | None = None
    nats_password: SecretStr | None = None
    nats_creds: Path | None = None
    nats_nkey_seed: Path | None = None
    # TLS: a CA bundle to trust the server, and a client certificate/key for mutual TLS.
    nats_tls_ca: Path | None = None
    nats_tls_cert: Path | None = None
    nats_tls_key: Path | None = None


class ServiceSettings(BusSettings):
    # SecretStr: the URL may carry the database password; it never shows in a repr or a log line.
    database_url: SecretStr = SecretStr("postgresql://postgres@127.0.0.1:55432/cairn")
    temporal_address: str = "127.0.0.1:57233"
    temporal_namespace: str = "cairn"
    # Public keys of every scope signer, `<principal>.<label>=<base64url>,...` (old and new while rotating).
    scope_verify_keys: str
    # This process's own private key, only where it calls other services (gateway, recall, workers).
    scope_signing_key: SecretStr | None = None
    # A scope token is valid this long after it was signed (and its id is remembered as long).
    scope_max_age_seconds: float = 30.0
    # Temporal payload encryption keys, `<kid>=<base64url 32 bytes>,...`; the first one encrypts.
    payload_keys: SecretStr | None = None
    # Encrypts tenants' own provider API keys at rest; without it no tenant provider key can be used.
    provider_secrets_key: SecretStr | None = None
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

    @field_validator("scope_verify_keys")
    @classmethod
    def _verify_keys_parse(cls, value: str) -> str:
        ScopeVerifier.from_setting(value)
        return value

    @field_validator("scope_signing_key")
    @classmethod
    def _signing_key_parses(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None:
            ScopeSigner.from_setting(value.get_secret_value())
        return value

    @cached_property
    def scope_signer(self) -> ScopeSigner:
        if self.scope_signing_key is None:
            raise ValueError("this process calls other services and needs CAIRN_SCOPE_SIGNING_KEY")
        return ScopeSigner.from_setting(self.scope_signing_key.get_secret_value())

    def scope_verifier(self) -> ScopeVerifier:
        """A fresh verifier (each holds its own replay cache)."""
        return ScopeVerifier.from_setting(self.scope_verify_keys, self.scope_max_age_seconds)
