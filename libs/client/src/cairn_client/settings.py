"""Where the SDK finds its gateway and key when they are not passed: `CAIRN_GATEWAY_URL`, `CAIRN_API_KEY`."""

from pydantic import SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict


class ClientSettings(BaseSettings):
    """SDK defaults, read from the environment (prefix `CAIRN_`)."""

    model_config = SettingsConfigDict(env_prefix="CAIRN_", extra="ignore")
    gateway_url: str = "http://127.0.0.1:58080"
    api_key: SecretStr | None = None
    timeout_seconds: float = 30.0
    connect_timeout_seconds: float = 5.0
    max_retries: int = 3
    max_retry_wait_seconds: float = 30.0
