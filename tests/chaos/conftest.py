"""A private stack for the chaos tests: they kill and stop its processes, so never the session stack."""

import secrets
import shutil
from collections.abc import AsyncIterator

import asyncpg
import httpx
import pytest

from cairn_devstack import RestartPolicy, StackPorts, free_port
from cairn_devstack.cairn import CairnConfig, CairnStack
from cairn_gateway.cli import bootstrap
from conftest import TEST_SERVICE_ENV, stack_dir

# Poison messages reach the dead-letter subject after 4 attempts ~1.4 s apart in all, not minutes.
CHAOS_SERVICE_ENV = {
    **TEST_SERVICE_ENV,
    "CAIRN_JETSTREAM_MAX_DELIVER": "4",
    "CAIRN_JETSTREAM_RETRY_INITIAL_SECONDS": "0.2",
    "CAIRN_JETSTREAM_RETRY_MAX_SECONDS": "1",
    "CAIRN_LOG_LEVEL": "INFO",
}
RESTART = RestartPolicy(initial_delay=0.2, max_delay=5.0, stable_after=20.0)


@pytest.fixture(scope="package")
async def chaos_stack() -> AsyncIterator[CairnStack]:
    config = CairnConfig(
        data_dir=stack_dir("cairn-chaos-"),
        provider_secrets_key=secrets.token_urlsafe(32),
        ports=StackPorts.free(),
        gateway_port=free_port(),
        service_env=CHAOS_SERVICE_ENV,
        # Durable settings: a SIGKILLed PostgreSQL must keep every acknowledged commit.
        postgres_settings={"fsync": "on", "synchronous_commit": "on"},
        restart=RESTART,
    )
    try:
        async with CairnStack(config) as running:
            yield running
    finally:
        shutil.rmtree(config.data_dir, ignore_errors=True)


@pytest.fixture(scope="package")
async def chaos_admin(chaos_stack: CairnStack) -> str:
    keys = await bootstrap(chaos_stack.database_url, None)
    return str(keys["admin_key"])


@pytest.fixture
async def chaos_http(chaos_stack: CairnStack) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=chaos_stack.gateway_url, timeout=30) as client:
        yield client


@pytest.fixture
async def chaos_db(chaos_stack: CairnStack) -> AsyncIterator[asyncpg.Connection]:
    conn = await asyncpg.connect(chaos_stack.database_url)
    yield conn
    await conn.close()
