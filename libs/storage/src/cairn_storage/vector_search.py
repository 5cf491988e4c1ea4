"""pgvector facts every HNSW reader needs: the ef_search ceiling and whether iterative scans exist here."""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

__all__ = ["PGVECTOR_EF_SEARCH_MAX", "IterativeScan", "probe_iterative_scan", "vector_literal"]

PGVECTOR_EF_SEARCH_MAX = 1000


@dataclass(frozen=True)
class IterativeScan:
    """What this database supports; each ANN read's meta is derived from the options it ran with.

    Attributes:
        mode: The value to SET on the ANN path, None when off or unavailable.
        state: ``off`` | ``applied`` | ``unavailable`` (the `meta.ann_iterative_scan` value).
        reason: Why it is unavailable.
    """

    mode: str | None
    state: Literal["off", "applied", "unavailable"]
    reason: str | None = None


async def probe_iterative_scan(sessionmaker: async_sessionmaker[AsyncSession], wanted: str) -> IterativeScan:
    """Ask the database once whether `hnsw.iterative_scan = wanted` is accepted (pgvector >= 0.8)."""
    if wanted == "off":
        return IterativeScan(None, "off")
    try:
        async with sessionmaker.begin() as session:
            await session.execute(text("SELECT set_config('hnsw.iterative_scan', :v, true)"), {"v": wanted})
    except Exception as exc:  # any refusal means unavailable; the reason says which
        reason = f"pgvector rejects hnsw.iterative_scan ({type(exc).__name__}); needs pgvector >= 0.8"
        return IterativeScan(None, "unavailable", reason)
    return IterativeScan(wanted, "applied")


def vector_literal(values: Sequence[float]) -> str:
    """pgvector's text form, for `CAST(:vector AS vector)` in raw SQL. Nine significant digits give back
    every float32 exactly, and formatting them is half the cost of `str(list)` (17-digit reprs)."""
    return "[" + ",".join(map("%.9g".__mod__, values)) + "]"
