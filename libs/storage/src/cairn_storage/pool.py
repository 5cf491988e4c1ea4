"""A plain asyncpg pool for the per-request statements on the hottest paths.

SQLAlchemy's execute path (compile cache lookup, greenlet hop, result processing) measured at a fifth of
the gateway's CPU per write for one rate-limit statement; asyncpg runs the same prepared statement with
none of it. Queries that build SQL, touch scoped tables or need the ORM stay on the engines.
"""

import asyncpg
from pydantic import SecretStr

from cairn_storage.engine import asyncpg_url


async def create_pool(
    url: str | SecretStr, *, size: int, server_settings: dict[str, str] | None = None
) -> asyncpg.Pool:
    """A fixed-size pool (no churn under load); `server_settings` apply to every connection."""
    dsn = asyncpg_url(url.get_secret_value() if isinstance(url, SecretStr) else url)
    return await asyncpg.create_pool(
        dsn.replace("postgresql+asyncpg://", "postgresql://", 1),
        min_size=size,
        max_size=size,
        server_settings={"application_name": "cairn", **(server_settings or {})},
    )
