"""Run Alembic migrations programmatically (used by `up`, the test fixture and the CLI)."""

import asyncio
from pathlib import Path

from alembic import command
from alembic.config import Config

MIGRATIONS = Path(__file__).parent / "migrations"


def alembic_config(database_url: str) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.set_main_option("sqlalchemy.url", database_url)
    return cfg


def upgrade_sync(database_url: str, revision: str = "head") -> None:
    """Upgrade the database to `revision` (blocking; runs its own event loop)."""
    command.upgrade(alembic_config(database_url), revision)


async def upgrade(database_url: str, revision: str = "head") -> None:
    """Upgrade from async code: Alembic's async env needs a loop of its own, so run it in a thread."""
    await asyncio.to_thread(upgrade_sync, database_url, revision)
