"""Builds the configured embedder."""

from __future__ import annotations

from cairn_embeddings.breaker import CircuitBreakerEmbedder
from cairn_embeddings.http import OpenAICompatibleEmbedder
from cairn_embeddings.local import LocalOnnxEmbedder
from cairn_embeddings.protocol import Embedder
from cairn_embeddings.settings import EmbeddingSettings

__all__ = ["build_embedder"]


def build_embedder(settings: EmbeddingSettings) -> CircuitBreakerEmbedder:
    """Build the embedder ``settings`` describe, wrapped in a circuit breaker.

    For the local provider this loads (and on first use builds, about 10 s) the ONNX model, so
    from async code call it through ``asyncio.to_thread``. Close the result on shutdown.

    Args:
        settings: Embedding settings.

    Returns:
        The breaker-wrapped embedder.
    """
    inner: Embedder
    if settings.provider == "local":
        inner = LocalOnnxEmbedder.load(
            cache_dir=settings.model_cache_dir,
            threads=settings.threads,
            max_batch_tokens=settings.max_batch_tokens,
        )
    else:
        # The settings validator guarantees these are set for the openai provider.
        assert settings.openai_base_url is not None
        assert settings.openai_api_key is not None
        assert settings.openai_model is not None
        inner = OpenAICompatibleEmbedder(
            base_url=settings.openai_base_url,
            api_key=settings.openai_api_key.get_secret_value(),
            model=settings.openai_model,
            dim=settings.dim,
            timeout=settings.openai_timeout_s,
        )
    return CircuitBreakerEmbedder(
        inner,
        failure_threshold=settings.breaker_failure_threshold,
        reset_after_s=settings.breaker_reset_after_s,
    )
