"""The interface every embedder implements."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

__all__ = ["Embedder", "SupportsClose"]


class Embedder(Protocol):
    """Turns texts into L2-normalised vectors.

    Attributes:
        name: Identifies the vector space (model and quantisation); vectors from embedders with
            different names must not be compared.
        dim: Length of every returned vector.
    """

    @property
    def name(self) -> str: ...

    @property
    def dim(self) -> int: ...

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed ``texts``, one unit-length vector per text, in input order.

        Args:
            texts: The texts; an empty sequence returns an empty list.

        Returns:
            ``len(texts)`` vectors of length ``dim``.
        """
        ...


@runtime_checkable
class SupportsClose(Protocol):
    """An embedder that holds resources (sessions, threads) to release on shutdown."""

    async def close(self) -> None:
        """Release the resources; the object must not be used afterwards."""
        ...
