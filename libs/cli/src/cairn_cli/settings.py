"""Where the CLI finds the gateway, keys and Temporal: `CAIRN_*` variables, else `.cairn/env` (`./task up`)."""

from pydantic import SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict


class CliSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CAIRN_", extra="ignore", env_file=".cairn/env")
    gateway_url: str = "http://127.0.0.1:58080"
    api_key: SecretStr | None = None  # keys: redacted in repr
    admin_key: SecretStr | None = None
    database_url: str | None = None
    temporal_address: str = "127.0.0.1:57233"
    temporal_namespace: str = "cairn"
    # `cairn workflows` decrypts Temporal payloads with these (`./task up` writes them to `.cairn/env`).
    payload_keys: str | None = None
    timeout_seconds: float = 30.0
