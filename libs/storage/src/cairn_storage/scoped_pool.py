"""Constant reads of scoped tables on a plain asyncpg pool, held to one scope as the engines hold theirs.

Through an engine a 10-row read costs about 0.5 cpu-ms on this machine (checkout, execution context,
greenlet hop, result wrapper, the scope hook's walk) against 0.14 for asyncpg's pool and prepared fetch;
a large subject's recall makes two such reads per request (docs/performance.md, eighteenth round). What
`scope_hook` guarantees on the engines holds here too:
- a statement is a constant `text()` that names its scope in `:tenant_id` and `:subject_id`; the same
  walker checks every call and refuses anything it cannot bind to one (tenant, subject);
- row-level security gets that scope as session settings, set only when it differs from the connection's
  last one (the hook's AUTOCOMMIT path: an idle connection keeps its last scope, never "every row");
- one statement, its own transaction; no maintenance path (those stay on the engines, audited).
"""

import json
from collections.abc import Mapping
from typing import Any

import asyncpg
from pydantic import SecretStr
from sqlalchemy import TextClause
from sqlalchemy.dialects.postgresql import asyncpg as asyncpg_dialect

from cairn_observability.tracing import pool_statement
from cairn_scope import ScopeGuardError
from cairn_scope.walker import walk
from cairn_storage.pool import create_pool
from cairn_storage.scope_hook import GUARD_REFUSALS, rls_settings

_SET_SESSION = (
    "SELECT set_config('cairn.tenant_id', $1, false), set_config('cairn.subject_id', $2, false),"
    " set_config('cairn.all_subjects', $3, false), set_config('cairn.maintenance', $4, false)"
)
_DIALECT = asyncpg_dialect.dialect()  # type: ignore[no-untyped-call]
RlsSettings = tuple[str, str, str, str]


class Row(asyncpg.Record):  # type: ignore[misc]
    """A record whose columns also read as attributes, as the engines' rows do (`row.id`)."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


class _ScopedConnection(asyncpg.Connection):  # type: ignore[misc]
    """Remembers the row-level-security settings it last carried (None: unknown, set them again)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.rls: RlsSettings | None = None

    def carry(self, settings: RlsSettings | None) -> None:
        self.rls = settings


async def _decode_json(conn: asyncpg.Connection) -> None:
    """json and jsonb columns as Python values, as the engines return them."""
    for name in ("json", "jsonb"):
        await conn.set_type_codec(name, encoder=json.dumps, decoder=json.loads, schema="pg_catalog")


class ScopedReads:
    """A small fixed pool for a service's hottest constant reads of scoped tables."""

    def __init__(self, pool: asyncpg.Pool) -> None:
        self._pool = pool
        # A statement's text -> its SQL with $n placeholders and the parameter names in their order (keyed
        # by the text, so the map holds one entry per constant statement however the clause was built).
        self._compiled: dict[str, tuple[str, tuple[str, ...]]] = {}

    @classmethod
    async def open(
        cls, url: str | SecretStr, *, size: int, server_settings: dict[str, str] | None = None
    ) -> "ScopedReads":
        pool = await create_pool(
            url,
            size=size,
            server_settings=server_settings,
            connection_class=_ScopedConnection,
            init=_decode_json,
        )
        return cls(pool)

    async def close(self) -> None:
        await self._pool.close()

    def _sql(self, statement: TextClause) -> tuple[str, tuple[str, ...]]:
        found = self._compiled.get(statement.text)
        if found is None:
            compiled = statement.compile(dialect=_DIALECT)
            found = self._compiled[statement.text] = (compiled.string, tuple(compiled.positiontup or ()))
        return found

    async def fetch(self, statement: TextClause, params: Mapping[str, Any]) -> list[Row]:
        """`statement`'s rows, run under the scope its `:tenant_id` / `:subject_id` name; `params` holds
        every value (values bound into the clause are not read)."""
        try:
            bound = walk(statement, [params])
        except ScopeGuardError:
            GUARD_REFUSALS.inc()
            raise
        sql, names = self._sql(statement)
        args = [params[name] for name in names]
        async with self._pool.acquire() as conn:
            if bound is not None:
                wanted = rls_settings(bound)
                if conn.rls != wanted:
                    conn.carry(None)  # unknown until the settings are in (a cancelled call leaves None)
                    await conn.execute(_SET_SESSION, *wanted)
                    conn.carry(wanted)
            with pool_statement(sql):
                rows: list[Row] = await conn.fetch(sql, *args, record_class=Row)
            return rows
