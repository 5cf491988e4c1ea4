"""Run Alembic migrations programmatically (used by `up`, the test fixture and the CLI).

`python -m cairn_storage.migrate` upgrades `CAIRN_DATABASE_URL` to head (the Kubernetes migration Job) and,
when `CAIRN_SERVICE_DATABASE_PASSWORD` is set, creates the services' RLS-bound login (`cairn_storage.roles`);
with `--wait` it changes nothing and waits until the database is at this code's head (the services'
init containers), so no service runs against a schema older than its own.
"""

import argparse
import asyncio
import logging
import sys
import time
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory
from pydantic import SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict
from sqlalchemy import text

from cairn_storage.engine import create_engine

MIGRATIONS = Path(__file__).parent / "migrations"

log = logging.getLogger(__name__)


class MigrateSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CAIRN_", extra="ignore")

    database_url: SecretStr  # may carry the password: never in a repr or a log line


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


def head_revisions(database_url: str) -> set[str]:
    return set(ScriptDirectory.from_config(alembic_config(database_url)).get_heads())


async def current_revisions(database_url: str) -> set[str] | None:
    """The database's revisions; None while it cannot be reached or has no schema yet."""
    engine = create_engine(database_url, pool_size=1)
    try:
        async with engine.connect() as conn:
            rows = await conn.execute(text("SELECT version_num FROM alembic_version"))
            return {str(r[0]) for r in rows}
    except Exception as exc:  # unreachable, starting up, or not migrated yet: all mean "not yet"
        log.info("database not ready: %s", type(exc).__name__)
        return None
    finally:
        await engine.dispose()


async def wait_reachable(database_url: str, deadline: float) -> None:
    """PostgreSQL may still be starting (the Job and the server start together)."""
    while True:
        engine = create_engine(database_url, pool_size=1)
        try:
            async with engine.connect() as conn:
                await conn.execute(text("SELECT 1"))
            return
        except Exception as exc:
            if time.monotonic() > deadline:
                raise TimeoutError(f"PostgreSQL did not answer: {exc}") from exc
        finally:
            await engine.dispose()
        await asyncio.sleep(1.0)


async def wait_for_head(database_url: str, deadline: float) -> None:
    heads = head_revisions(database_url)
    while (current := await current_revisions(database_url)) != heads:
        if time.monotonic() > deadline:
            raise TimeoutError(f"database at {sorted(current or [])}, this code needs {sorted(heads)}")
        await asyncio.sleep(2.0)


def _service_login(url: str) -> None:
    from cairn_storage.roles import ServiceLogin, ensure_service_login

    login = ServiceLogin()
    if login.service_database_password is None:
        return
    asyncio.run(
        ensure_service_login(
            url, login.service_database_user, login.service_database_password.get_secret_value()
        )
    )
    log.info("service login %s can connect (row-level security applies to it)", login.service_database_user)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cairn_storage.migrate", description=__doc__)
    parser.add_argument("--wait", action="store_true", help="migrate nothing; wait for the schema")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds before giving up")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s migrate %(levelname)s %(message)s")
    url = MigrateSettings().database_url.get_secret_value()
    deadline = time.monotonic() + args.timeout
    try:
        if args.wait:
            asyncio.run(wait_for_head(url, deadline))
        else:
            asyncio.run(wait_reachable(url, deadline))
            upgrade_sync(url)
            _service_login(url)
    except TimeoutError as exc:
        log.error("%s", exc)
        return 1
    log.info("database at %s", ", ".join(sorted(head_revisions(url))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
