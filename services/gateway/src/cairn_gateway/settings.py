"""Gateway settings (env prefix CAIRN_)."""

from pydantic import Field

from cairn_servicekit.settings import ServiceSettings


class GatewaySettings(ServiceSettings):
    host: str = "127.0.0.1"
    port: int = 58080
    # Revocation takes effect on every replica within this many seconds.
    key_cache_ttl_seconds: float = 5.0
    # Write-path token bucket per key; a tenant may override both.
    rate_limit_per_second: float = 20.0
    rate_limit_burst: int = 40
    # Read-path (recall, knowledge search, merged recall) token bucket per key, separate from writes.
    read_rate_limit_per_second: float = 20.0
    read_rate_limit_burst: int = 40
    # Projects per tenant (POST /api/v1/projects past it: 422 project_limit).
    max_projects_per_tenant: int = Field(default=1000, ge=1)
    readiness_timeout_seconds: float = 1.5
    # The embedding worker has no NATS subjects: `/readyz` asks its own HTTP port.
    memory_embedder_http_url: str | None = None
    # Request bodies above this many bytes are refused (413) before anything reads or parses them.
    max_body_bytes: int = Field(default=1024 * 1024, ge=1)
    # Browser origins (comma-separated) allowed to call the codec endpoint: the Temporal UI's URL.
    codec_cors_origins: str = ""

    @property
    def codec_cors_origin_list(self) -> list[str]:
        return [origin.strip() for origin in self.codec_cors_origins.split(",") if origin.strip()]
