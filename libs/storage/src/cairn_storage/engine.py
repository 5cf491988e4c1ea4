"""Engine and session factories."""

from typing import Any

from pydantic import SecretStr
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine

from cairn_observability.metrics import track_engine
from cairn_observability.tracing import instrument_engine
from cairn_storage.scope_hook import install_scope_hook


def asyncpg_url(url: str) -> str:
    """Normalise a postgres DSN to the asyncpg driver SQLAlchemy needs."""
    for prefix in ("postgresql+asyncpg://", "postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+asyncpg://" + url[len(prefix) :]
    raise ValueError("database url must start with postgresql://")


def create_engine(
    url: str | SecretStr,
    *,
    pool_size: int = 10,
    max_overflow: int | None = None,
    server_settings: dict[str, str] | None = None,
    **kwargs: Any,
) -> AsyncEngine:
    """An asyncpg engine; `server_settings` apply to every pooled connection (never session-level SET).

    `max_overflow` defaults to `pool_size`. Hot paths pass 0: an overflow connection is closed when it is
    returned, so steady load above the pool size reconnects on every request."""
    connect_args: dict[str, Any] = {
        "server_settings": {"application_name": "cairn", **(server_settings or {})}
    }
    engine = create_async_engine(
        asyncpg_url(url.get_secret_value() if isinstance(url, SecretStr) else url),
        pool_size=pool_size,
        max_overflow=pool_size if max_overflow is None else max_overflow,
        # No pre-ping: it costs a round trip on every checkout. A connection broken by a database restart
        # fails one request and is then discarded by the pool; recycling bounds idle connections' age.
        pool_recycle=1800,
        connect_args=connect_args,
        **kwargs,
    )
    track_engine(engine)  # pool use on /metrics
    instrument_engine(engine)  # statement spans when tracing is on
    install_scope_hook(engine)  # every statement walked; its scope set for row-level security
    return engine


def make_sessionmaker(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    return async_sessionmaker(engine, expire_on_commit=False)
