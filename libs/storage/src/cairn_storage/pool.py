"""A plain asyncpg pool for the per-request statements on the hottest paths.

SQLAlchemy's execute path (compile cache lookup, greenlet hop, result processing) measured at a fifth of
the gateway's CPU per write for one rate-limit statement; asyncpg runs the same prepared statement with
none of it. Queries that build SQL or need the ORM stay on the engines; constant reads of scoped tables
go through `cairn_storage.scoped_pool`, which holds them to one scope as the engines' hook does.
"""

from typing import Any

import asyncpg
from pydantic import SecretStr

from cairn_storage.engine import asyncpg_url


async def _keep_session(_: asyncpg.Connection) -> None:
    """Release without asyncpg's default reset (`RESET ALL; UNLISTEN *; ...`, a round trip per release):
    these pools run fixed single statements that leave no session state behind."""


async def create_pool(
    url: str | SecretStr, *, size: int, server_settings: dict[str, str] | None = None, **kwargs: Any
) -> asyncpg.Pool:
    """A fixed-size pool (no churn under load) for statements that leave no session state (no SET, no
    LISTEN, no open cursor): connections go back without a reset. `server_settings` apply to each one;
    `kwargs` go to `asyncpg.create_pool` (`connection_class`, `init`: `cairn_storage.scoped_pool`)."""
    dsn = asyncpg_url(url.get_secret_value() if isinstance(url, SecretStr) else url)
    return await asyncpg.create_pool(
        dsn.replace("postgresql+asyncpg://", "postgresql://", 1),
        min_size=size,
        max_size=size,
        server_settings={"application_name": "cairn", **(server_settings or {})},
        reset=_keep_session,
        **kwargs,
    )
