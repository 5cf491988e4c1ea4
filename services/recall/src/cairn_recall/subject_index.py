"""Per-subject partial indexes for large subjects.

A subject with tens of thousands of memories inside a tenant of hundreds of thousands cannot be served well
by the tenant-wide HNSW graph: the subject is a few per cent of the graph, so even an iterative scan walks
mostly other subjects' rows (bench/recall_scale.py measured own-top-10 recall 0.63 for a 20k subject in a
500k tenant), and the exact scan grows linearly with the subject. Above `subject_index_min_rows` live rows
the recall service therefore builds, once and in the background, indexes that hold only that subject:

- an HNSW graph over its memories' vectors and one over its chunk vectors, so the ANN walk never leaves
  the subject and the search is as accurate as a small corpus' HNSW;
- a GIN index over its memories' full-text vectors, so BM25 reads only the rows that match a term.

Each index is partial (`WHERE tenant_id = '<t>' AND subject_id = '<s>' ...`), so the planner uses it only
for statements that carry those literal values: recall runs these statements with
`plan_cache_mode = force_custom_plan`, so the bound values are planned as constants and the predicate proof
succeeds. Writes pay one predicate check per partial index on the table, and planning considers every
index, so the number of subject indexes is capped (`subject_index_max`); subjects beyond it keep the
tenant-wide path.
"""

import asyncio
import hashlib
import logging
import time

from cachetools import TTLCache
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from cairn_scope import Scope

log = logging.getLogger(__name__)

# name suffix -> (table, access method and column, predicate beyond tenant/subject). ef_construction 200:
# on clustered near-copies the default 64 builds a graph that ef_search 400 searches at recall 0.976,
# 200 at 0.996 (20k rows, bench data; the build takes ~2x as long, ~12 s).
_INDEXES: dict[str, tuple[str, str, str]] = {
    "mh": (
        "memories",
        "hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 200)",
        " AND superseded_by IS NULL AND embedding IS NOT NULL",
    ),
    "ch": ("memory_chunks", "hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 200)", ""),
    "mt": ("memories", "gin (tsv)", " AND superseded_by IS NULL"),
}
PREFIX = "cairn_subj_"


def index_names(scope: Scope) -> dict[str, str]:
    """Deterministic, catalog-safe names (63-byte limit) for one subject's indexes."""
    digest = hashlib.sha256(f"{scope.tenant_id}\x00{scope.subject_id}".encode()).hexdigest()[:24]
    return {kind: f"{PREFIX}{kind}_{digest}" for kind in _INDEXES}


class SubjectIndexes:
    """Which subjects have their own indexes (cached briefly), and building them in the background."""

    def __init__(
        self,
        engine: AsyncEngine,
        *,
        min_rows: int,
        max_indexes: int,
        cache_seconds: float = 30.0,
        maintenance_work_mem: str = "256MB",
    ) -> None:
        self._engine = engine
        self.min_rows = min_rows
        self._max = max_indexes
        self._work_mem = maintenance_work_mem
        # Subjects with valid indexes (at most max_indexes), and a bounded short-lived memory of the others.
        self._indexed: set[tuple[str, str]] = set()
        self._unindexed: TTLCache[tuple[str, str], bool] = TTLCache(100_000, cache_seconds)
        self._building: dict[tuple[str, str], asyncio.Task[None]] = {}

    @property
    def enabled(self) -> bool:
        return self.min_rows > 0 and self._max > 0

    async def ready(self, scope: Scope) -> bool:
        """True when every index of the subject exists and is valid (an interrupted build leaves none)."""
        if not self.enabled:
            return False
        key = (scope.tenant_id, scope.subject_id)
        if key in self._indexed:
            return True  # an index, once valid, stays (dropping one is an operator act: restart the service)
        if key in self._unindexed:
            return False
        names = list(index_names(scope).values())
        async with self._engine.connect() as conn:
            valid = await conn.scalar(
                text(
                    "SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
                    "WHERE c.relname = ANY(:names) AND i.indisvalid AND i.indisready"
                ),
                {"names": names},
            )
        if valid == len(names):
            self._indexed.add(key)
            return True
        self._unindexed[key] = True
        return False

    def ensure(self, scope: Scope) -> None:
        """Start building the subject's indexes unless a build is already running in this process."""
        key = (scope.tenant_id, scope.subject_id)
        if not self.enabled or key in self._building:
            return
        task = asyncio.create_task(self.build(scope))
        self._building[key] = task
        task.add_done_callback(lambda _t: self._building.pop(key, None))

    async def build(self, scope: Scope) -> None:
        """CREATE INDEX CONCURRENTLY each missing index; replicas serialise on an advisory lock per subject,
        and a build another replica left invalid (killed midway) is dropped and redone."""
        names = index_names(scope)
        lock = int.from_bytes(hashlib.sha256(names["mh"].encode()).digest()[:8], "big", signed=True)
        started = time.monotonic()
        try:
            async with self._engine.connect() as conn:
                conn = await conn.execution_options(isolation_level="AUTOCOMMIT")
                if not await conn.scalar(text("SELECT pg_try_advisory_lock(:k)"), {"k": lock}):
                    return  # another replica is building it
                try:
                    existing = await conn.scalar(
                        text("SELECT count(*) FROM pg_class WHERE relname LIKE :p AND relkind = 'i'"),
                        {"p": PREFIX + "mh_%"},
                    )
                    if names["mh"] not in await self._present(conn, names) and (existing or 0) >= self._max:
                        log.warning(
                            "subject index cap (%d) reached: subject keeps the tenant-wide path", self._max
                        )
                        return
                    await conn.execute(text(f"SET maintenance_work_mem = '{self._work_mem}'"))
                    for kind, name in names.items():
                        await self._build_one(conn, scope, kind, name)
                finally:
                    await conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": lock})
            self._unindexed.pop((scope.tenant_id, scope.subject_id), None)
            log.info(
                "built subject indexes for tenant %s subject %s in %.1f s",
                scope.tenant_id,
                scope.subject_id,
                time.monotonic() - started,
            )
        except Exception:
            log.exception("building subject indexes for tenant %s failed", scope.tenant_id)

    @staticmethod
    async def _present(conn: AsyncConnection, names: dict[str, str]) -> set[str]:
        rows = await conn.execute(
            text(
                "SELECT c.relname, i.indisvalid FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid "
                "WHERE c.relname = ANY(:names)"
            ),
            {"names": list(names.values())},
        )
        return {r.relname for r in rows if r.indisvalid}

    @staticmethod
    async def _build_one(conn: AsyncConnection, scope: Scope, kind: str, name: str) -> None:
        state = await conn.scalar(
            text(
                "SELECT i.indisvalid FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid WHERE c.relname = :n"
            ),
            {"n": name},
        )
        if state is True:
            return
        if state is False:
            await conn.execute(text(f'DROP INDEX CONCURRENTLY IF EXISTS "{name}"'))
        table, method, extra = _INDEXES[kind]
        # The server quotes the literals (format %L), so no subject id can break out of the predicate.
        ddl = await conn.scalar(
            text(
                "SELECT format('CREATE INDEX CONCURRENTLY %I ON %I USING ' || :method || "
                "' WHERE tenant_id = %L::uuid AND subject_id = %L' || :extra, CAST(:name AS text), "
                "CAST(:table AS text), CAST(:tenant AS text), CAST(:subject AS text))"
            ),
            {
                "method": method,
                "extra": extra,
                "name": name,
                "table": table,
                "tenant": scope.tenant_id,
                "subject": scope.subject_id,
            },
        )
        await conn.execute(text(str(ddl)))
