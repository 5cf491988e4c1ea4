"""Text embeddings for Cairn.

The default is a local int8 ONNX build of all-MiniLM-L6-v2 (384 dimensions) that needs no network
and no torch; an OpenAI-compatible HTTP provider is the alternative. Both sit behind a circuit
breaker built by :func:`build_embedder`.
"""

from cairn_embeddings.breaker import BreakerState, CircuitBreakerEmbedder
from cairn_embeddings.chunking import chunk_text
from cairn_embeddings.errors import EmbedderUnavailable, EmbeddingError, EmbeddingProviderError
from cairn_embeddings.factory import build_embedder
from cairn_embeddings.hashing import content_hash
from cairn_embeddings.http import OpenAICompatibleEmbedder
from cairn_embeddings.local import LocalOnnxEmbedder
from cairn_embeddings.protocol import Embedder, SupportsClose
from cairn_embeddings.settings import EmbeddingSettings

__all__ = [
    "BreakerState",
    "CircuitBreakerEmbedder",
    "Embedder",
    "EmbedderUnavailable",
    "EmbeddingError",
    "EmbeddingProviderError",
    "EmbeddingSettings",
    "LocalOnnxEmbedder",
    "OpenAICompatibleEmbedder",
    "SupportsClose",
    "build_embedder",
    "chunk_text",
    "content_hash",
]
