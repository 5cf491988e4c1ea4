"""The real stack, started once per test session on free ports in a temp dir.

`CAIRN_TEST_BACKEND=embedded|external|testcontainers` picks where PostgreSQL, NATS and Temporal come
from (`tests/backends.py`); the Cairn services themselves are always started here.
"""

import secrets
import shutil
import tempfile
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from cairn_devstack import StackPorts, free_port
from cairn_devstack.cairn import CairnConfig, CairnStack
from cairn_gateway.cli import bootstrap
from tests.backends import BackendSettings, external_services

# Short timers so tests see revocation, pruning and sweeps quickly; production defaults are in Settings.
TEST_SERVICE_ENV = {
    "CAIRN_KEY_CACHE_TTL_SECONDS": "1",
    "CAIRN_SESSION_PRUNE_INTERVAL_SECONDS": "1",
    "CAIRN_EMBED_SWEEP_INTERVAL_SECONDS": "2",
    "CAIRN_EMBED_SWEEP_MIN_AGE_SECONDS": "3",
    "CAIRN_RATE_LIMIT_PER_SECOND": "100000",
    "CAIRN_RATE_LIMIT_BURST": "100000",
    "CAIRN_READ_RATE_LIMIT_PER_SECOND": "100000",
    "CAIRN_READ_RATE_LIMIT_BURST": "100000",
    # Caps small enough to test at the edge (test_limits.py); production defaults are in Settings.
    "CAIRN_SESSION_MAX_TURNS": "1000",
    "CAIRN_SESSION_MAX_BYTES": str(3 * 1024 * 1024),
    "CAIRN_MAX_PROJECTS_PER_TENANT": "25",
    "CAIRN_LOG_LEVEL": "WARNING",
    "CAIRN_PROVIDER_CACHE_TTL_SECONDS": "1",
    # Subjects with more than 5 embedded rows take the index-safe ANN path, so tests exercise both.
    "CAIRN_RECALL_EXACT_MAX_ROWS": "5",
    # Tenants with more than 5 articles take the knowledge service's HNSW path, so tests exercise both.
    "CAIRN_KNOWLEDGE_EXACT_MAX_ROWS": "5",
    # Usage counters reach tenant_usage within half a second; the live-row snapshot runs every second.
    "CAIRN_USAGE_FLUSH_INTERVAL_SECONDS": "0.5",
    "CAIRN_USAGE_SNAPSHOT_INTERVAL_SECONDS": "1",
    "CAIRN_EMBED_BACKLOG_POLL_SECONDS": "1",
}


def stack_dir(prefix: str) -> Path:
    """A data dir outside pytest's tmp tree: pytest chmods /tmp/pytest-of-<user> to 0700 at every session
    start, which locks out the `pgserver` OS user that PostgreSQL runs as."""
    return Path(tempfile.mkdtemp(prefix=prefix))


@pytest.fixture(scope="session")
async def stack() -> AsyncIterator[CairnStack]:
    with ExitStack() as containers:  # testcontainers' containers stop with it
        external = await external_services(BackendSettings(), containers)
        config = CairnConfig(
            data_dir=stack_dir("cairn-test-"),
            provider_secrets_key=secrets.token_urlsafe(32),
            ports=StackPorts.free(),
            gateway_port=free_port(),
            external=external,
            service_env=dict(TEST_SERVICE_ENV),
            postgres_settings={"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"},
        )
        try:
            async with CairnStack(config) as running:
                yield running
        finally:
            shutil.rmtree(config.data_dir, ignore_errors=True)


@pytest.fixture(scope="session")
async def admin_key(stack: CairnStack) -> str:
    keys = await bootstrap(stack.database_url, None)
    return str(keys["admin_key"])


@pytest.fixture
async def http(stack: CairnStack) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=stack.gateway_url, timeout=30) as client:
        yield client


def bearer(key: str, **extra: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}", **extra}


@dataclass
class TenantHandle:
    """A fresh tenant for one test, with helpers to mint keys in it."""

    id: str
    name: str
    http: httpx.AsyncClient
    admin_key: str

    async def key(self, role: str = "agent", agent_id: str | None = None) -> str:
        response = await self.http.post(
            "/api/v1/keys",
            json={"tenant_id": self.id, "role": role, "agent_id": agent_id},
            headers=bearer(self.admin_key),
        )
        assert response.status_code == 201, response.text
        return str(response.json()["data"]["key"])

    async def agent(self, agent_id: str | None = None) -> str:
        return await self.key("agent", agent_id or f"agent-{uuid.uuid4().hex[:8]}")


@pytest.fixture
async def new_tenant(http: httpx.AsyncClient, admin_key: str) -> Callable[[], Awaitable[TenantHandle]]:
    async def make() -> TenantHandle:
        name = f"t-{uuid.uuid4().hex[:12]}"
        response = await http.post("/api/v1/tenants", json={"name": name}, headers=bearer(admin_key))
        assert response.status_code == 201, response.text
        return TenantHandle(response.json()["data"]["id"], name, http, admin_key)

    return make


@pytest.fixture
async def tenant(new_tenant: Callable[[], Awaitable[TenantHandle]]) -> TenantHandle:
    return await new_tenant()
