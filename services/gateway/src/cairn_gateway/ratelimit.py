"""Write-path rate limit: a token bucket per key, kept in PostgreSQL so every gateway replica shares it."""

import math
import uuid

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from cairn_contracts.errors import RateLimited

# Tokens available now: the stored tokens refilled for the time since the last take, capped at the burst.
# clock_timestamp(), not now(): a transaction that waited on the row lock must not see time run backwards.
_REFILLED = (
    "LEAST(EXCLUDED.burst, b.tokens + GREATEST(0, EXTRACT(EPOCH FROM clock_timestamp() - b.updated_at))"
    " * EXCLUDED.rate)"
)

# One atomic statement (one round trip): read the tenant's limits (or the defaults), refill, take a token
# if there is one, and record the outcome in the row it returns.
_TAKE = text(
    f"""
    INSERT INTO rate_buckets AS b (key_id, tokens, allowed, rate, burst, updated_at)
    SELECT :key_id, lim.burst - 1, true, lim.rate, lim.burst, clock_timestamp()
    FROM (SELECT COALESCE((SELECT rate_limit_per_second FROM tenants WHERE id = :tenant_id), :rate) AS rate,
                 COALESCE((SELECT rate_limit_burst FROM tenants WHERE id = :tenant_id), :burst) AS burst) lim
    ON CONFLICT (key_id) DO UPDATE SET
        allowed = {_REFILLED} >= 1,
        tokens = {_REFILLED} - CASE WHEN {_REFILLED} >= 1 THEN 1 ELSE 0 END,
        rate = EXCLUDED.rate,
        burst = EXCLUDED.burst,
        updated_at = clock_timestamp()
    RETURNING allowed, tokens, rate
    """
)


class RateLimiter:
    """Takes tokens over its own autocommit engine: a take is one atomic statement, so it needs no
    transaction, and with asynchronous commit it costs one round trip and no WAL flush (a bucket lost in a
    crash only refills early)."""

    def __init__(self, engine: AsyncEngine, rate_per_second: float, burst: int) -> None:
        self._engine = engine
        self._rate = rate_per_second
        self._burst = burst

    async def take(self, key_id: str, tenant_id: str | None) -> None:
        """Take one token for `key_id` or raise RateLimited with a Retry-After in whole seconds."""
        params = {
            "key_id": uuid.UUID(key_id),
            "tenant_id": uuid.UUID(tenant_id) if tenant_id else None,
            "rate": self._rate,
            "burst": self._burst,
        }
        async with self._engine.connect() as conn:
            row = (await conn.execute(_TAKE, params)).one()
        if not row.allowed:
            retry_after = max(1, math.ceil((1 - row.tokens) / row.rate))
            raise RateLimited(
                f"write rate limit reached; retry in {retry_after}s",
                headers={"Retry-After": str(retry_after)},
            )
