"""Alembic environment: async engine over asyncpg."""

import asyncio

from alembic import context
from sqlalchemy.engine import Connection

from cairn_storage.engine import asyncpg_url, create_engine
from cairn_storage.models import Base

target_metadata = Base.metadata


def _run(connection: Connection) -> None:
    context.configure(connection=connection, target_metadata=target_metadata, compare_type=True)
    with context.begin_transaction():
        context.run_migrations()


async def _main() -> None:
    url = context.config.get_main_option("sqlalchemy.url")
    assert url, "sqlalchemy.url is required"
    engine = create_engine(asyncpg_url(url), pool_size=1)
    # Migrations read and rewrite whole tables: an audited maintenance path, and FORCEd RLS lets them.
    async with engine.execution_options(cairn_maintenance="migration").connect() as connection:
        await connection.run_sync(_run)
        await connection.commit()
    await engine.dispose()


asyncio.run(_main())
