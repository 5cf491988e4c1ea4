"""The scope backstop on every engine: each statement is walked before it runs, and its scope reaches
PostgreSQL's row-level security as transaction-local settings.

`create_engine` installs this on every engine, so a store that forgets `check_scoped` is still caught:
the walker (`cairn_scope.walker`) refuses a statement on a scoped table it cannot bind to one
(tenant, subject), and a bound statement sets `cairn.tenant_id` / `cairn.subject_id` for its
transaction (one `set_config` round trip the first time a transaction touches a scoped table; none
for a transaction that never does). The policies of migration 0014 read those settings. On an AUTOCOMMIT
connection (one statement, one transaction: the memory service's quota-checked insert) the settings are
session-level instead, set only when the scope differs from the connection's last one.

Paths that legitimately cross subjects (sweeps, workers, metering, migrations) declare a reason with the
`cairn_maintenance` execution option (`maintenance_sessionmaker`, `declare_maintenance`): the walker is
skipped, `cairn.maintenance` is set for the transaction (the policies let such a transaction see every
row), and the use is audited: `cairn_scope_maintenance_statements_total{reason}` counts every statement
and the log says which reason is in use (first use, then once a minute with the count).
"""

import logging
import threading
import time
from collections.abc import Mapping
from typing import Any

from prometheus_client import Counter
from sqlalchemy import event, text
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from cairn_scope import ScopeGuardError
from cairn_scope.walker import Bound, row_write_by_key, walk

MAINTENANCE_OPTION = "cairn_maintenance"

MAINTENANCE_STATEMENTS = Counter(
    "cairn_scope_maintenance_statements",
    "Statements run under a declared maintenance reason (no scope walk; RLS sees every row)",
    ["reason"],
)
GUARD_REFUSALS = Counter(
    "cairn_scope_guard_refusals", "Statements the engine hook refused: a scoped table not bound to one scope"
)

log = logging.getLogger("cairn.scope.maintenance")

_SET = text(
    "SELECT set_config('cairn.tenant_id', :t, true), set_config('cairn.subject_id', :s, true),"
    " set_config('cairn.all_subjects', :a, true), set_config('cairn.maintenance', :m, true)"
)
_SET_SESSION = text(
    "SELECT set_config('cairn.tenant_id', :t, false), set_config('cairn.subject_id', :s, false),"
    " set_config('cairn.all_subjects', :a, false), set_config('cairn.maintenance', :m, false)"
)
_SESSION = "cairn_rls_session"  # in Connection.info: the session-level settings an autocommit use left
_STATE = "cairn_rls_state"  # in Connection.info: (transaction, settings) last set on that connection
_SETTING = "cairn_rls_setting"  # in Connection.info while the hook runs its own set_config
_AUDIT_EVERY = 60.0


class _Audit:
    """Maintenance use in the log: a reason's first use, then at most once a minute with its count."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: dict[str, tuple[float, int]] = {}

    def record(self, reason: str) -> None:
        MAINTENANCE_STATEMENTS.labels(reason).inc()
        now = time.monotonic()
        with self._lock:
            last, count = self._seen.get(reason, (0.0, 0))
            count += 1
            if last and now - last < _AUDIT_EVERY:
                self._seen[reason] = (last, count)
                return
            self._seen[reason] = (now, 0)
        log.info("maintenance path %r ran %d statement(s) without a scope", reason, count)


AUDIT = _Audit()


def _param_sets(multiparams: Any, params: Any) -> list[Mapping[str, Any]]:
    sets = [p for p in (multiparams or []) if isinstance(p, Mapping)]
    for p in multiparams or []:
        if isinstance(p, list | tuple):
            sets.extend(q for q in p if isinstance(q, Mapping))
    if isinstance(params, Mapping) and params:
        sets.append(params)
    return sets


def _current(conn: Connection) -> tuple[str, str, str, str] | None:
    """The settings this connection's open transaction already carries, if the hook set any."""
    txn = conn.get_nested_transaction() or conn.get_transaction()
    state = conn.info.get(_STATE)
    if txn is None or state is None or state[0] is not txn:
        return None
    settings: tuple[str, str, str, str] = state[1]
    return settings


def _before_execute(
    conn: Connection, clauseelement: Any, multiparams: Any, params: Any, execution_options: Mapping[str, Any]
) -> None:
    if conn.info.get(_SETTING):
        return
    options = {**conn.get_execution_options(), **execution_options}
    reason = options.get(MAINTENANCE_OPTION)
    if reason:
        AUDIT.record(str(reason))
        wanted = ("", "", "", str(reason))
    else:
        try:
            bound = walk(clauseelement, _param_sets(multiparams, params))
        except ScopeGuardError:
            if row_write_by_key(clauseelement) and _current(conn) is not None:
                return  # the ORM writing back a row this transaction loaded under its scope
            GUARD_REFUSALS.inc()
            raise
        if bound is None:
            return  # no scoped table: nothing for RLS to see
        wanted = rls_settings(bound)
    if options.get("isolation_level") == "AUTOCOMMIT" or conn._is_autocommit_isolation():
        # Each statement is its own transaction, so a local setting would die before it runs: set it for
        # the session instead, only when it changes (the next scoped statement on this connection sets
        # its own; a connection keeps its last scope while idle, never "every row").
        if conn.info.get(_SESSION) != wanted:
            _set(conn, _SET_SESSION, wanted)
            conn.info[_SESSION] = wanted
        return
    if _current(conn) == wanted:
        return
    _set(conn, _SET, wanted)
    conn.info[_STATE] = (conn.get_nested_transaction() or conn.get_transaction(), wanted)


def rls_settings(bound: Bound) -> tuple[str, str, str, str]:
    """The values of `cairn.tenant_id`, `cairn.subject_id`, `cairn.all_subjects` and `cairn.maintenance`
    (migration 0014's policies) for a statement bound to `bound`."""
    return (bound.tenant_id, bound.subject_id or "", "" if bound.subject_id else "on", "")


def _set(conn: Connection, statement: Any, wanted: tuple[str, str, str, str]) -> None:
    conn.info[_SETTING] = True
    try:
        conn.execute(statement, {"t": wanted[0], "s": wanted[1], "a": wanted[2], "m": wanted[3]})
    finally:
        conn.info[_SETTING] = False


def install_scope_hook(engine: AsyncEngine) -> None:
    """Walk every statement this engine runs and hand its scope to row-level security."""
    event.listen(engine.sync_engine, "before_execute", _before_execute)


def maintenance_sessionmaker(
    sessionmaker: async_sessionmaker[AsyncSession], reason: str
) -> async_sessionmaker[AsyncSession]:
    """Sessions whose every statement runs as the maintenance path `reason` (audited, unscoped)."""
    engine = sessionmaker.kw["bind"]
    return async_sessionmaker(
        engine.execution_options(**{MAINTENANCE_OPTION: reason}), expire_on_commit=False
    )


async def declare_maintenance(session: AsyncSession, reason: str) -> None:
    """Mark an open session's transaction as the maintenance path `reason` (call before its first query)."""
    await session.connection(execution_options={MAINTENANCE_OPTION: reason})
