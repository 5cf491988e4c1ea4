"""Rate limits: token buckets per key, kept in PostgreSQL so every gateway replica shares them.

Two buckets per key: `write` (every write path) and `read` (recall and search, which cost an embedding and
a ranked scan); draining one never starves the other. Each has deployment defaults and per-tenant overrides
(`PATCH /api/v1/tenants/{id}`: `rate_limit_*` for writes, `read_rate_limit_*` for reads).
"""

import math
import uuid
from dataclasses import dataclass
from typing import Literal

import asyncpg

from cairn_contracts.errors import RateLimited

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


Kind = Literal["write", "read"]
_TAKE = {
    "write": _take("rate_limit_per_second", "rate_limit_burst"),
    "read": _take("read_rate_limit_per_second", "read_rate_limit_burst"),
}


@dataclass(frozen=True)
class Bucket:
    rate_per_second: float
    burst: int


def bucket_id(key_id: str, kind: Kind) -> uuid.UUID:
    """The write bucket keeps the key's own id (existing rows stay valid); the read bucket a derived one."""
    key = uuid.UUID(key_id)
    return key if kind == "write" else uuid.uuid5(key, "read")


class RateLimiter:
    """Takes tokens over its own asyncpg pool: a take is one atomic statement, so it needs no transaction,
    and with asynchronous commit it costs one round trip and no WAL flush (a bucket lost in a crash only
    refills early)."""

    def __init__(self, pool: asyncpg.Pool, write: Bucket, read: Bucket) -> None:
        self._pool = pool
        self._defaults: dict[Kind, Bucket] = {"write": write, "read": read}

    async def take(self, key_id: str, tenant_id: str | None, kind: Kind = "write") -> None:
        """Take one token from `key_id`'s `kind` bucket or raise RateLimited with a whole-second Retry-After."""
        default = self._defaults[kind]
        tenant = uuid.UUID(tenant_id) if tenant_id else None
        async with self._pool.acquire() as conn:
            row = await conn.fetchrow(
                _TAKE[kind], bucket_id(key_id, kind), tenant, default.rate_per_second, default.burst
            )
        assert row is not None  # the upsert always returns its row
        if not row["allowed"]:
            retry_after = max(1, math.ceil((1 - row["tokens"]) / row["rate"]))
            raise RateLimited(
                f"{kind} rate limit reached; retry in {retry_after}s",
                headers={"Retry-After": str(retry_after)},
            )
