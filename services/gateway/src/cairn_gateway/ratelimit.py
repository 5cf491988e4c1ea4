"""Write-path rate limit: a token bucket per key, kept in PostgreSQL so every gateway replica shares it."""

import math
import uuid

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from cairn_contracts.errors import RateLimited

# One atomic statement (one round trip): read the tenant's limits (or the defaults), refill by elapsed
# time, take a token if there is one, and record the outcome in the row it returns.
_TAKE = text(
    """
    INSERT INTO rate_buckets AS b (key_id, tokens, allowed, rate, burst, updated_at)
    SELECT :key_id, lim.burst - 1, true, lim.rate, lim.burst, now()
    FROM (SELECT COALESCE((SELECT rate_limit_per_second FROM tenants WHERE id = :tenant_id), :rate) AS rate,
                 COALESCE((SELECT rate_limit_burst FROM tenants WHERE id = :tenant_id), :burst) AS burst) lim
    ON CONFLICT (key_id) DO UPDATE SET
        allowed = LEAST(EXCLUDED.burst, b.tokens + EXTRACT(EPOCH FROM now() - b.updated_at) * EXCLUDED.rate) >= 1,
        tokens = LEAST(EXCLUDED.burst, b.tokens + EXTRACT(EPOCH FROM now() - b.updated_at) * EXCLUDED.rate)
                 - CASE WHEN LEAST(EXCLUDED.burst,
                                   b.tokens + EXTRACT(EPOCH FROM now() - b.updated_at) * EXCLUDED.rate) >= 1
                        THEN 1 ELSE 0 END,
        rate = EXCLUDED.rate,
        burst = EXCLUDED.burst,
        updated_at = now()
    RETURNING allowed, tokens, rate
    """
)


class RateLimiter:
    def __init__(self, sessionmaker: async_sessionmaker[AsyncSession], rate_per_second: float, burst: int) -> None:
        self._sessionmaker = sessionmaker
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
        async with self._sessionmaker.begin() as session:
            row = (await session.execute(_TAKE, params)).one()
        if not row.allowed:
            retry_after = max(1, math.ceil((1 - row.tokens) / row.rate))
            raise RateLimited(f"write rate limit reached; retry in {retry_after}s",
                              headers={"Retry-After": str(retry_after)})
