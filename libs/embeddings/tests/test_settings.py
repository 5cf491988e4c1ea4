from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from cairn_embeddings import (
    CircuitBreakerEmbedder,
    EmbeddingSettings,
    LocalOnnxEmbedder,
    OpenAICompatibleEmbedder,
    build_embedder,
)


class TestEmbeddingSettings:
    def test_defaults(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("HOME", "/home/agent")
        for name in ("PROVIDER", "MODEL_CACHE_DIR", "THREADS", "DIM"):
            monkeypatch.delenv(f"CAIRN_EMBEDDING_{name}", raising=False)  # the defaults, not the caller's env
        settings = EmbeddingSettings()
        assert settings.provider == "local"
        assert settings.model_cache_dir == Path("/home/agent/.cache/cairn/models")
        assert (settings.threads, settings.dim) == (2, 384)
        assert (settings.breaker_failure_threshold, settings.breaker_reset_after_s) == (3, 30.0)

    def test_reads_prefixed_environment(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("CAIRN_EMBEDDING_PROVIDER", "openai")
        monkeypatch.setenv("CAIRN_EMBEDDING_OPENAI_BASE_URL", "https://llm.example/v1/")
        monkeypatch.setenv("CAIRN_EMBEDDING_OPENAI_API_KEY", "sk-live-123")
        monkeypatch.setenv("CAIRN_EMBEDDING_OPENAI_MODEL", "text-embedding-3-small")
        monkeypatch.setenv("CAIRN_EMBEDDING_DIM", "1536")
        monkeypatch.setenv("CAIRN_EMBEDDING_BREAKER_FAILURE_THRESHOLD", "5")
        settings = EmbeddingSettings()
        assert settings.openai_base_url == "https://llm.example/v1"
        assert settings.openai_api_key is not None
        assert settings.openai_api_key.get_secret_value() == "sk-live-123"
        assert "sk-live-123" not in repr(settings)
        assert (settings.dim, settings.breaker_failure_threshold) == (1536, 5)

    def test_openai_needs_url_key_and_model(self) -> None:
        with pytest.raises(ValidationError, match="openai_api_key, openai_model"):
            EmbeddingSettings(provider="openai", openai_base_url="https://llm.example/v1")

    def test_placeholder_key_is_refused(self) -> None:
        with pytest.raises(ValidationError, match="placeholder"):
            EmbeddingSettings(
                provider="openai",
                openai_base_url="https://llm.example/v1",
                openai_api_key="changeme",
                openai_model="m",
            )

    def test_local_dimension_is_fixed(self) -> None:
        with pytest.raises(ValidationError, match="384"):
            EmbeddingSettings(provider="local", dim=768)


class TestBuildEmbedder:
    @pytest.mark.asyncio
    async def test_openai_provider_is_wrapped_in_a_breaker(self) -> None:
        settings = EmbeddingSettings(
            provider="openai",
            openai_base_url="http://127.0.0.1:9/v1",
            openai_api_key="sk-test",
            openai_model="m",
            dim=1024,
            breaker_failure_threshold=7,
        )
        embedder = build_embedder(settings)
        assert isinstance(embedder, CircuitBreakerEmbedder)
        assert isinstance(embedder.inner, OpenAICompatibleEmbedder)
        assert (embedder.name, embedder.dim, embedder.state) == ("openai:m", 1024, "closed")
        await embedder.close()

    @pytest.mark.asyncio
    async def test_local_provider_loads_from_the_cache(
        self, int8_model_path: Path, model_cache_dir: Path
    ) -> None:
        embedder = build_embedder(EmbeddingSettings(model_cache_dir=model_cache_dir, threads=1))
        assert isinstance(embedder.inner, LocalOnnxEmbedder)
        (vector,) = await embedder.embed(["hello"])
        assert len(vector) == embedder.dim == 384
        await embedder.close()
