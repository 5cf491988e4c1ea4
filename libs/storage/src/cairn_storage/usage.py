"""Per-tenant usage metering, off the hot path: handlers add to in-process counters (no I/O), and a
background loop adds them to `tenant_usage` with one UPSERT per flush. Replicas add, never overwrite, so
any number of them meter the same tenant. A crash loses at most one flush interval of counts.
"""

import asyncio
import contextlib
import logging
import math
import uuid
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, date, datetime
from typing import Literal

from prometheus_client import REGISTRY, Counter
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector
from sqlalchemy import func, text
from sqlalchemy.dialects.postgresql import Insert, insert
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from cairn_storage.models import TenantUsage
from cairn_storage.scope_hook import declare_maintenance

log = logging.getLogger(__name__)

UsageKind = Literal["writes", "session_bytes", "recalls", "embedded_tokens", "compile_calls"]
COUNTED: tuple[UsageKind, ...] = ("writes", "session_bytes", "recalls", "embedded_tokens", "compile_calls")
REPORTED = (*COUNTED, "live_rows")

# Totals only: the per-tenant numbers live in PostgreSQL (and the top-N gauge below), never in labels.
USAGE_TOTAL = Counter("cairn_usage_total", "Metered use summed over all tenants", ["kind"])


def estimate_tokens(texts: Iterable[str]) -> int:
    """Embedding tokens, estimated as one per four characters (what providers bill is close to this for
    English text; the metered figure is an estimate by design, the same for every embedder)."""
    return sum(max(1, math.ceil(len(t) / 4)) for t in texts)


def utc_today() -> date:
    return datetime.now(UTC).date()


class UsageMeter:
    def __init__(
        self, sessionmaker: async_sessionmaker[AsyncSession], interval_seconds: float = 10.0
    ) -> None:
        self._sm = sessionmaker
        self._interval = interval_seconds
        self._pending: dict[tuple[str, date], dict[str, int]] = defaultdict(lambda: dict.fromkeys(COUNTED, 0))

    def add(self, tenant_id: str, kind: UsageKind, amount: int = 1) -> None:
        """Count `amount` of `kind` for the tenant today (UTC). Never blocks, never fails the caller."""
        if amount <= 0:
            return
        self._pending[(tenant_id, utc_today())][kind] += amount
        USAGE_TOTAL.labels(kind).inc(amount)

    async def flush(self) -> int:
        """Add the pending counts to `tenant_usage`; on a database error they stay pending for the next try."""
        pending, self._pending = self._pending, defaultdict(lambda: dict.fromkeys(COUNTED, 0))
        rows = [{"tenant_id": uuid.UUID(t), "day": d, **counts} for (t, d), counts in pending.items()]
        if not rows:
            return 0
        try:
            async with self._sm.begin() as session:
                await session.execute(_upsert(rows))
        except IntegrityError:
            # A tenant deleted meanwhile (foreign key): write the others one by one, drop its counts.
            await self._flush_one_by_one(rows)
        except Exception:
            log.warning("usage flush failed; %d rows stay pending", len(rows), exc_info=True)
            self._merge_back(pending)
            return 0
        return len(rows)

    async def _flush_one_by_one(self, rows: Sequence[dict[str, object]]) -> None:
        for row in rows:
            try:
                async with self._sm.begin() as session:
                    await session.execute(_upsert([row]))
            except IntegrityError:
                log.info("usage of deleted tenant %s dropped", row["tenant_id"])

    def _merge_back(self, pending: dict[tuple[str, date], dict[str, int]]) -> None:
        for key, counts in pending.items():
            for kind, amount in counts.items():
                self._pending[key][kind] += amount

    async def run(self) -> None:
        """Flush every interval until cancelled, then once more."""
        try:
            while True:
                await asyncio.sleep(self._interval)
                await self.flush()
        finally:
            with contextlib.suppress(Exception):
                await asyncio.shield(self.flush())


def _upsert(rows: Sequence[dict[str, object]]) -> Insert:
    stmt = insert(TenantUsage).values(list(rows))
    return stmt.on_conflict_do_update(
        index_elements=[TenantUsage.tenant_id, TenantUsage.day],
        set_={
            **{kind: getattr(TenantUsage, kind) + getattr(stmt.excluded, kind) for kind in COUNTED},
            "updated_at": func.now(),
        },
    )


# Maintenance across every tenant (no caller scope): today's live-row count of every tenant, 0 included.
_SNAPSHOT_LIVE_ROWS = text(
    "INSERT INTO tenant_usage (tenant_id, day, live_rows) "
    "SELECT t.id, (now() AT TIME ZONE 'UTC')::date, count(m.id) FROM tenants t "
    "LEFT JOIN memories m ON m.tenant_id = t.id AND m.superseded_by IS NULL GROUP BY t.id "
    "ON CONFLICT (tenant_id, day) DO UPDATE SET live_rows = EXCLUDED.live_rows, updated_at = now()"
)


async def snapshot_live_rows(sessionmaker: async_sessionmaker[AsyncSession]) -> None:
    async with sessionmaker.begin() as session:
        await declare_maintenance(session, "usage_metering")  # every tenant's live rows
        await session.execute(_SNAPSHOT_LIVE_ROWS)


class TopTenantsCollector(Collector):
    """`cairn_usage_top_tenant{kind, tenant_id}`: today's figures of the N biggest tenants per kind.

    Tenant ids appear as label values here only, and at most N per kind (N x 6 series in all, N is
    `CAIRN_USAGE_TOP_TENANTS`, default 10): enough to see who drives load, bounded however many tenants exist.
    """

    def __init__(self) -> None:
        self.top: dict[str, list[tuple[str, int]]] = {}

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily(
            "cairn_usage_top_tenant",
            "Today's (UTC) usage of the N biggest tenants per kind",
            labels=["kind", "tenant_id"],
        )
        for kind, ranked in self.top.items():
            for tenant_id, value in ranked:
                family.add_metric([kind, tenant_id], value)
        yield family

    async def refresh(self, sessionmaker: async_sessionmaker[AsyncSession], n: int) -> None:
        top: dict[str, list[tuple[str, int]]] = {}
        async with sessionmaker() as session:
            for kind in REPORTED:
                rows = await session.execute(
                    text(
                        f"SELECT tenant_id, {kind} AS v FROM tenant_usage "  # kind is one of REPORTED
                        "WHERE day = (now() AT TIME ZONE 'UTC')::date AND " + kind + " > 0 "
                        "ORDER BY v DESC LIMIT :n"
                    ),
                    {"n": n},
                )
                top[kind] = [(str(r.tenant_id), int(r.v)) for r in rows]
        self.top = top


TOP_TENANTS = TopTenantsCollector()
REGISTRY.register(TOP_TENANTS)
