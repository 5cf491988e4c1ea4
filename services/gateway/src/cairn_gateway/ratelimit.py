"""Rate limits: token buckets per key, kept in PostgreSQL so every gateway replica shares them.

Two buckets per key: `write` (every write path) and `read` (recall and search, which cost an embedding and
a ranked scan); draining one never starves the other. Each has deployment defaults and per-tenant overrides
(`PATCH /api/v1/tenants/{id}`: `rate_limit_*` for writes, `read_rate_limit_*` for reads).
"""

import functools
import math
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import asyncpg

from cairn_contracts.errors import RateLimited
from cairn_servicekit.batching import Coalescer, committed, declare_kinds, distinct_rounds

# Tokens available now: the stored tokens refilled for the time since the last take, capped at the burst.
# clock_timestamp(), not now(): a transaction that waited on the row lock must not see time run backwards.
_REFILLED = (
    "LEAST(EXCLUDED.burst, b.tokens + GREATEST(0, EXTRACT(EPOCH FROM clock_timestamp() - b.updated_at))"
    " * EXCLUDED.rate)"
)


# One atomic statement (one round trip): read the tenant's limits (or the defaults), refill, take a token
# if there is one, and record the outcome in the row it returns.
def _take(rate_column: str, burst_column: str) -> str:
    return f"""
    INSERT INTO rate_buckets AS b (key_id, tokens, allowed, rate, burst, updated_at)
    SELECT $1, lim.burst - 1, true, lim.rate, lim.burst, clock_timestamp()
    FROM (SELECT COALESCE((SELECT {rate_column} FROM tenants WHERE id = $2::uuid), $3::float8) AS rate,
                 COALESCE((SELECT {burst_column} FROM tenants WHERE id = $2::uuid), $4::int) AS burst) lim
    ON CONFLICT (key_id) DO UPDATE SET
        allowed = {_REFILLED} >= 1,
        tokens = {_REFILLED} - CASE WHEN {_REFILLED} >= 1 THEN 1 ELSE 0 END,
        rate = EXCLUDED.rate,
        burst = EXCLUDED.burst,
        updated_at = clock_timestamp()
    RETURNING allowed, tokens, rate
    """


# Takes for many buckets in one statement: the requests that arrived together (one round trip and one
# statement instead of one each). Bucket r asks for r.n tokens and gets all of them or none (`allowed`);
# a bucket that could not give them all runs its takes again one at a time (`RateLimiter._take_batch`),
# so exactly as many pass as it holds. Each bucket appears once, and in key order, so two such statements
# (from two gateway replicas) lock rows in the same order.
#
# The tokens asked for reach the DO UPDATE through EXCLUDED (it holds only table columns): the new-bucket
# row is (tokens = burst - n, allowed) when n <= burst, so n = EXCLUDED.burst - EXCLUDED.tokens; when
# n > burst no bucket can give n (tokens never exceed the burst), and the take asks for infinity.
def _take_many(rate_column: str, burst_column: str) -> str:
    wanted = "CASE WHEN EXCLUDED.allowed THEN EXCLUDED.burst - EXCLUDED.tokens ELSE 'Infinity'::float8 END"
    return f"""
    INSERT INTO rate_buckets AS b (key_id, tokens, allowed, rate, burst, updated_at)
    SELECT r.key_id, CASE WHEN lim.burst >= r.n THEN lim.burst - r.n ELSE lim.burst END, lim.burst >= r.n,
        lim.rate, lim.burst, clock_timestamp()
    FROM unnest($1::uuid[], $2::uuid[], $5::int[]) WITH ORDINALITY AS r(key_id, tenant_id, n, o),
    LATERAL (SELECT COALESCE((SELECT {rate_column} FROM tenants WHERE id = r.tenant_id), $3::float8) AS rate,
                    COALESCE((SELECT {burst_column} FROM tenants WHERE id = r.tenant_id), $4::int) AS burst) lim
    ORDER BY r.o
    ON CONFLICT (key_id) DO UPDATE SET
        allowed = {_REFILLED} >= {wanted},
        tokens = {_REFILLED} - CASE WHEN {_REFILLED} >= {wanted} THEN {wanted} ELSE 0 END,
        rate = EXCLUDED.rate,
        burst = EXCLUDED.burst,
        updated_at = clock_timestamp()
    RETURNING key_id, allowed, tokens, rate
    """


Kind = Literal["write", "read"]
_COLUMNS: dict[Kind, tuple[str, str]] = {
    "write": ("rate_limit_per_second", "rate_limit_burst"),
    "read": ("read_rate_limit_per_second", "read_rate_limit_burst"),
}
_TAKE = {kind: _take(*columns) for kind, columns in _COLUMNS.items()}
_TAKE_MANY = {kind: _take_many(*columns) for kind, columns in _COLUMNS.items()}
_Take = tuple[uuid.UUID, uuid.UUID | None]  # (bucket, tenant)
declare_kinds("rate_limit")


@dataclass(frozen=True)
class Bucket:
    rate_per_second: float
    burst: int


def bucket_id(key_id: str, kind: Kind) -> uuid.UUID:
    """The write bucket keeps the key's own id (existing rows stay valid); the read bucket a derived one."""
    key = uuid.UUID(key_id)
    return key if kind == "write" else uuid.uuid5(key, "read")


def rounds(takes: Sequence[_Take]) -> list[list[int]]:
    """Indexes of `takes` in statements that name each bucket once (a repeat goes to the next one), each
    in bucket order."""
    return [sorted(indexes, key=lambda i: takes[i][0]) for indexes in distinct_rounds([t[0] for t in takes])]


class RateLimiter:
    """Takes tokens over its own asyncpg pool: a take is one atomic statement, so it needs no transaction,
    and with asynchronous commit it costs one round trip and no WAL flush (a bucket lost in a crash only
    refills early). Takes that arrive together are coalesced (`cairn_servicekit.batching`) into one
    statement per batch, in one transaction: a failed batch takes nothing, and its takes run again alone."""

    def __init__(self, pool: asyncpg.Pool, write: Bucket, read: Bucket, *, max_batch: int = 128) -> None:
        self._pool = pool
        self._defaults: dict[Kind, Bucket] = {"write": write, "read": read}
        self._batches = {
            kind: Coalescer(
                "rate_limit",
                functools.partial(self._take_one, kind),
                functools.partial(self._take_batch, kind),
                max_batch=max_batch,
                lanes=2,
            )
            for kind in self._defaults
        }

    async def _take_one(self, kind: Kind, take: _Take) -> asyncpg.Record:
        default = self._defaults[kind]
        async with self._pool.acquire() as conn:
            row = await conn.fetchrow(_TAKE[kind], *take, default.rate_per_second, default.burst)
        assert row is not None  # the upsert always returns its row
        return row

    async def _take_batch(self, kind: Kind, takes: Sequence[_Take]) -> list[asyncpg.Record]:
        """One statement for every bucket of the batch, each asking for all its takes; the takes of a
        bucket that could not give them all run again one per statement (`rounds`), in arrival order,
        in the same transaction."""
        default = self._defaults[kind]
        limits = (default.rate_per_second, default.burst)
        results: list[asyncpg.Record | None] = [None] * len(takes)
        by_bucket: dict[uuid.UUID, list[int]] = {}
        for i, (bucket, _) in enumerate(takes):
            by_bucket.setdefault(bucket, []).append(i)
        buckets = sorted(by_bucket)

        async def take_all(conn: asyncpg.Connection) -> None:
            counts = [len(by_bucket[b]) for b in buckets]
            tenants = [takes[by_bucket[b][0]][1] for b in buckets]
            short: list[int] = []
            for row in await conn.fetch(_TAKE_MANY[kind], buckets, tenants, *limits, counts):
                if row["allowed"]:
                    for i in by_bucket[row["key_id"]]:
                        results[i] = row
                else:
                    short.extend(by_bucket[row["key_id"]])
            short.sort()  # arrival order, so the first takes are the ones that pass
            for indexes in rounds([takes[i] for i in short]):
                again = [short[i] for i in indexes]
                rows = await conn.fetch(
                    _TAKE_MANY[kind], [takes[i][0] for i in again], [takes[i][1] for i in again],
                    *limits, [1] * len(again),
                )  # fmt: skip
                taken = {row["key_id"]: row for row in rows}
                for i in again:
                    results[i] = taken[takes[i][0]]  # the upsert returns every row it names

        async with self._pool.acquire() as conn:
            transaction = conn.transaction()
            await transaction.start()
            await committed(transaction, lambda: take_all(conn))
        return [row for row in results if row is not None]  # all of them (KeyError above otherwise)

    async def take(self, key_id: str, tenant_id: str | None, kind: Kind = "write") -> None:
        """Take one token from `key_id`'s `kind` bucket or raise RateLimited with a whole-second Retry-After."""
        tenant = uuid.UUID(tenant_id) if tenant_id else None
        row = await self._batches[kind].submit((bucket_id(key_id, kind), tenant))
        if not row["allowed"]:
            retry_after = max(1, math.ceil((1 - row["tokens"]) / row["rate"]))
            raise RateLimited(
                f"{kind} rate limit reached; retry in {retry_after}s",
                headers={"Retry-After": str(retry_after)},
            )
