"""Embeddings from any server speaking the OpenAI ``POST /embeddings`` API."""

from __future__ import annotations

import math
from collections.abc import Sequence

from pydantic import BaseModel, ValidationError

from cairn_embeddings.errors import EmbeddingProviderError, EmbeddingRateLimited
from cairn_embeddings.transport import (
    ProviderRateLimited,
    ProviderTransport,
    ProviderTransportError,
    shared_transport,
)

__all__ = ["OpenAICompatibleEmbedder"]

# A float in JSON is at most ~25 bytes: 256 texts x 3072 dimensions stay well inside this.
DEFAULT_MAX_RESPONSE_BYTES = 32 * 1024 * 1024


class _EmbeddingItem(BaseModel):
    index: int
    embedding: list[float]


class _EmbeddingResponse(BaseModel):
    data: list[_EmbeddingItem]


class OpenAICompatibleEmbedder:
    """Client for an OpenAI-compatible embeddings endpoint (OpenAI, vLLM, Ollama, LiteLLM, TEI...).

    Requests go through the process's shared :class:`ProviderTransport` (one session, bounded retries
    honouring ``Retry-After``, bounded response size) unless another is given.

    Attributes:
        name: ``"openai:<model>"``.
        dim: Expected vector length; any other length is an error.
    """

    def __init__(
        self,
        base_url: str,
        api_key: str,
        model: str,
        dim: int,
        timeout: float = 30.0,
        *,
        batch_size: int = 256,
        transport: ProviderTransport | None = None,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    ) -> None:
        """Configure the client; no connection is made here.

        Args:
            base_url: API root, e.g. ``https://api.openai.com/v1``; ``/embeddings`` is appended.
            api_key: Sent as ``Authorization: Bearer <api_key>``.
            model: The ``model`` field of each request.
            dim: Expected vector length.
            timeout: Total seconds allowed per HTTP request.
            batch_size: Texts per request; larger inputs are sent as several requests.
            transport: The HTTP transport; the process's shared one by default.
            max_response_bytes: A longer response body is an error (and is not read further).
        """
        self.name = f"openai:{model}"
        self.dim = dim
        self.model = model
        self.batch_size = batch_size
        self.endpoint = base_url.rstrip("/")
        self._url = self.endpoint + "/embeddings"
        self._headers = {"Authorization": f"Bearer {api_key}"}
        self._timeout = timeout
        self.transport = transport or shared_transport()
        self._max_response_bytes = max_response_bytes

    def __repr__(self) -> str:
        return f"OpenAICompatibleEmbedder(endpoint={self.endpoint!r}, model={self.model!r}, api_key='**********')"

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed ``texts`` with the remote model.

        Args:
            texts: The texts; an empty sequence returns an empty list without a request.

        Returns:
            One unit-length vector of ``dim`` floats per text, in input order.

        Raises:
            TypeError: ``texts`` is a single ``str``.
            EmbeddingProviderError: HTTP error status, timeout, connection failure, malformed
                body, missing or duplicate indices, wrong dimension, or a zero vector.
        """
        if isinstance(texts, str):
            raise TypeError("embed takes a sequence of texts, not a single str")
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            vectors.extend(await self._embed_batch(list(texts[start : start + self.batch_size])))
        return vectors

    async def _embed_batch(self, texts: list[str]) -> list[list[float]]:
        try:
            response = await self.transport.post_json(
                self._url,
                {"model": self.model, "input": texts},
                headers=self._headers,
                timeout_s=self._timeout,
                max_response_bytes=self._max_response_bytes,
            )
        except ProviderRateLimited as exc:
            raise EmbeddingRateLimited(str(exc), retry_after_s=exc.retry_after_s) from exc
        except ProviderTransportError as exc:
            raise EmbeddingProviderError(f"embedding request: {exc}", status=exc.status) from exc
        body, status = response.body, response.status
        if status >= 400:
            # The body is not echoed: providers quote the request (and sometimes the key) in their errors,
            # and this message reaches logs.
            raise EmbeddingProviderError(f"embedding provider answered HTTP {status}", status=status)
        try:
            parsed = _EmbeddingResponse.model_validate_json(body)
        except ValidationError as exc:
            raise EmbeddingProviderError(
                f"malformed embedding response: {exc.error_count()} errors", status=status
            ) from exc
        return self._ordered_unit_vectors(parsed, len(texts), status)

    def _ordered_unit_vectors(
        self, parsed: _EmbeddingResponse, expected: int, status: int
    ) -> list[list[float]]:
        by_index = {item.index: item.embedding for item in parsed.data}
        if len(parsed.data) != expected or sorted(by_index) != list(range(expected)):
            raise EmbeddingProviderError(
                f"embedding response has indices {sorted(by_index)[:10]} for {expected} inputs", status=status
            )
        vectors: list[list[float]] = []
        for index in range(expected):
            vector = by_index[index]
            if len(vector) != self.dim:
                raise EmbeddingProviderError(
                    f"embedding has dimension {len(vector)}, expected {self.dim}", status=status
                )
            norm = math.sqrt(math.fsum(x * x for x in vector))
            if not math.isfinite(norm) or norm == 0.0:
                raise EmbeddingProviderError("embedding is a zero or non-finite vector", status=status)
            vectors.append([x / norm for x in vector])
        return vectors

    async def close(self) -> None:
        """Nothing of its own to release: the transport is shared by the process (closed at its shutdown)."""
