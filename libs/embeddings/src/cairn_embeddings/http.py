"""Embeddings from any server speaking the OpenAI ``POST /embeddings`` API."""

from __future__ import annotations

import math
from collections.abc import Sequence

import aiohttp
from pydantic import BaseModel, ValidationError

from cairn_embeddings.errors import EmbeddingProviderError

__all__ = ["OpenAICompatibleEmbedder"]

_MAX_ERROR_BODY = 300


class _EmbeddingItem(BaseModel):
    index: int
    embedding: list[float]


class _EmbeddingResponse(BaseModel):
    data: list[_EmbeddingItem]


class OpenAICompatibleEmbedder:
    """Client for an OpenAI-compatible embeddings endpoint (OpenAI, vLLM, Ollama, LiteLLM, TEI...).

    The object owns an ``aiohttp`` session, created on first use inside the running event loop;
    call :meth:`close` on shutdown.

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
    ) -> None:
        """Configure the client; no connection is made here.

        Args:
            base_url: API root, e.g. ``https://api.openai.com/v1``; ``/embeddings`` is appended.
            api_key: Sent as ``Authorization: Bearer <api_key>``.
            model: The ``model`` field of each request.
            dim: Expected vector length.
            timeout: Total seconds allowed per HTTP request.
            batch_size: Texts per request; larger inputs are sent as several requests.
        """
        self.name = f"openai:{model}"
        self.dim = dim
        self.model = model
        self.batch_size = batch_size
        self._url = base_url.rstrip("/") + "/embeddings"
        self._headers = {"Authorization": f"Bearer {api_key}"}
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._session: aiohttp.ClientSession | None = None

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(headers=self._headers, timeout=self._timeout)
        return self._session

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
            async with self._client().post(self._url, json={"model": self.model, "input": texts}) as resp:
                body = await resp.read()
                status = resp.status
        except TimeoutError as exc:
            raise EmbeddingProviderError(f"embedding request to {self._url} timed out") from exc
        except aiohttp.ClientError as exc:
            raise EmbeddingProviderError(f"embedding request to {self._url} failed: {exc!r}") from exc
        if status >= 400:
            snippet = body[:_MAX_ERROR_BODY].decode("utf-8", "replace")
            raise EmbeddingProviderError(
                f"embedding provider answered HTTP {status}: {snippet}", status=status
            )
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
        """Close the HTTP session; a later ``embed`` would open a new one."""
        if self._session is not None:
            await self._session.close()
            self._session = None
