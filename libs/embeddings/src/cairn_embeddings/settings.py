"""Configuration of the embedding provider, read from ``CAIRN_EMBEDDING_*`` variables."""

from __future__ import annotations

from pathlib import Path
from typing import Literal, Self

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["EmbeddingSettings"]

LOCAL_DIM = 384
# Padded tokens (rows x longest) per inference call. Past about this the activations of a call leave the
# cache: 256 LongMemEval turns (128 tokens on average) cost 23.4-23.8 cpu-ms each in batches of 32 and
# 16.3-19.4 under this budget; turns cut to 200 characters 5.5-5.8 against 4.3-5.3; 20-token facts, which
# fit 32 to a call either way, 2.1-2.3 both (two intra-op threads, docs/performance.md).
MAX_BATCH_TOKENS = 1024
_PLACEHOLDER_KEYS = {"", "changeme", "change-me", "secret", "your-api-key", "sk-...", "xxx", "todo"}


class EmbeddingSettings(BaseSettings):
    """Which embedder to run and how; build it in ``__main__`` and pass it to :func:`build_embedder`.

    Attributes:
        provider: ``"local"`` (bundled int8 MiniLM) or ``"openai"`` (any OpenAI-compatible server).
        model_cache_dir: Where the built ONNX model is cached.
        threads: onnxruntime intra-op threads for the local model.
        max_batch_tokens: Padded tokens per inference call of the local model (its batches split there).
        openai_base_url: API root, e.g. ``https://api.openai.com/v1``.
        openai_api_key: Bearer token.
        openai_model: Model name sent with each request.
        openai_timeout_s: Total seconds per HTTP request.
        dim: Vector length; 384 for the local model.
        breaker_failure_threshold: Consecutive failures that open the circuit.
        breaker_reset_after_s: Seconds before a half-open trial call.
    """

    model_config = SettingsConfigDict(env_prefix="CAIRN_EMBEDDING_", extra="ignore")

    provider: Literal["local", "openai"] = "local"
    model_cache_dir: Path = Path("~/.cache/cairn/models")
    threads: int = Field(default=2, ge=1)
    max_batch_tokens: int = Field(default=MAX_BATCH_TOKENS, ge=1)
    openai_base_url: str | None = None
    openai_api_key: SecretStr | None = None
    openai_model: str | None = None
    openai_timeout_s: float = Field(default=30.0, gt=0)
    dim: int = Field(default=LOCAL_DIM, ge=1)
    breaker_failure_threshold: int = Field(default=3, ge=1)
    breaker_reset_after_s: float = Field(default=30.0, ge=0)

    @field_validator("model_cache_dir")
    @classmethod
    def _expand_home(cls, value: Path) -> Path:
        return value.expanduser()

    @field_validator("openai_base_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if not value.startswith(("http://", "https://")):
            raise ValueError("openai_base_url must start with http:// or https://")
        return value.rstrip("/")

    @model_validator(mode="after")
    def _provider_complete(self) -> Self:
        if self.provider == "local" and self.dim != LOCAL_DIM:
            raise ValueError(f"the local model produces {LOCAL_DIM}-dimensional vectors, not {self.dim}")
        if self.provider == "openai":
            missing = [
                name
                for name in ("openai_base_url", "openai_api_key", "openai_model")
                if getattr(self, name) is None
            ]
            if missing:
                raise ValueError(f"provider 'openai' needs {', '.join(missing)}")
            assert self.openai_api_key is not None
            if self.openai_api_key.get_secret_value().strip().lower() in _PLACEHOLDER_KEYS:
                raise ValueError("openai_api_key is a placeholder")
        return self
