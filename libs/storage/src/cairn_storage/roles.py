"""The login role the services connect as: a member of `cairn_service` (migration 0014), so row-level
security applies to it (never a superuser, never BYPASSRLS, not the tables' owner).

`python -m cairn_storage.roles` creates or updates it on `CAIRN_DATABASE_URL` (the migration role, which
needs CREATEROLE) from `CAIRN_SERVICE_DATABASE_USER` and `CAIRN_SERVICE_DATABASE_PASSWORD`; the migration
Job does the same after migrating (`cairn_storage.migrate`); `cairn_devstack` calls `ensure_service_login`.
"""

import asyncio
import logging
import re
import sys
from urllib.parse import quote, urlsplit, urlunsplit

from pydantic import SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict
from sqlalchemy import text

from cairn_storage.engine import create_engine

SERVICE_ROLE = "cairn_service"
_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")

log = logging.getLogger(__name__)


class ServiceLogin(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CAIRN_", extra="ignore")

    service_database_user: str = "cairn_app"
    service_database_password: SecretStr | None = None


class RoleSettings(ServiceLogin):
    database_url: SecretStr


def login_url(admin_url: str, user: str, password: str) -> str:
    """`admin_url` with its credentials replaced by the service login's."""
    parts = urlsplit(admin_url)
    host = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit(parts._replace(netloc=f"{quote(user, safe='')}:{quote(password, safe='')}@{host}"))


async def ensure_service_login(admin_url: str, user: str, password: str) -> None:
    """Create (or re-password) the LOGIN role `user`, member of `cairn_service`, with no way past RLS."""
    if not _NAME.match(user):
        raise ValueError(f"not a plain role name: {user!r}")
    engine = create_engine(admin_url, pool_size=1)
    try:
        async with engine.execution_options(cairn_maintenance="roles").begin() as conn:
            exists = await conn.scalar(text("SELECT 1 FROM pg_roles WHERE rolname = :u"), {"u": user})
            verb = "ALTER" if exists else "CREATE"
            # A role's password cannot be a bind parameter: quote_literal builds the statement server-side.
            ddl = await conn.scalar(
                text(
                    f"SELECT format('{verb} ROLE %I LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEROLE NOCREATEDB"
                    " PASSWORD %L', CAST(:u AS text), CAST(:p AS text))"
                ),
                {"u": user, "p": password},
            )
            await conn.execute(text(str(ddl)))
            await conn.execute(text(f'GRANT {SERVICE_ROLE} TO "{user}"'))
    finally:
        await engine.dispose()


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s roles %(levelname)s %(message)s")
    settings = RoleSettings()
    if settings.service_database_password is None:
        log.error("CAIRN_SERVICE_DATABASE_PASSWORD is not set")
        return 2
    asyncio.run(
        ensure_service_login(
            settings.database_url.get_secret_value(),
            settings.service_database_user,
            settings.service_database_password.get_secret_value(),
        )
    )
    log.info("service login %s is a member of %s", settings.service_database_user, SERVICE_ROLE)
    return 0


if __name__ == "__main__":
    sys.exit(main())
