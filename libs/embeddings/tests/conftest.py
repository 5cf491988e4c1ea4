from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from cairn_embeddings.local import LocalOnnxEmbedder
from cairn_embeddings.model_files import ModelFiles, bundled_model_files
from cairn_embeddings.onnx_builder import ensure_int8_model


@pytest.fixture(scope="session")
def model_files() -> ModelFiles:
    return bundled_model_files()


@pytest.fixture(scope="session")
def model_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # A fresh cache, so the suite exercises the real build (a few seconds) rather than a stale file.
    return tmp_path_factory.mktemp("model-cache")


@pytest.fixture(scope="session")
def int8_model_path(model_files: ModelFiles, model_cache_dir: Path) -> Path:
    return ensure_int8_model(model_files, model_cache_dir)


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def local_embedder(int8_model_path: Path, model_cache_dir: Path) -> AsyncIterator[LocalOnnxEmbedder]:
    embedder = LocalOnnxEmbedder.load(cache_dir=model_cache_dir)
    yield embedder
    await embedder.close()
