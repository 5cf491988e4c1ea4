"""The embedding worker holds off while a write burst arrives and embeds it once the burst stops, never
later than its max wait (`cairn_memory.burst`, `CAIRN_EMBED_BURST_RATE`)."""

import asyncio
import time
from collections.abc import AsyncIterator

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from cairn_devstack.cairn import CairnStack
from conftest import TenantHandle, bearer
from tests.e2e.test_memory import listed

# Small batches and a low rate, so a test-sized burst is one; a short max wait bounds the test.
BURSTY = {
    "CAIRN_EMBED_BATCH_SIZE": "8",
    "CAIRN_EMBED_BURST_RATE": "20",
    "CAIRN_EMBED_BURST_MAX_WAIT_SECONDS": "3",
}
WRITES = 96


async def restart_embedder(stack: CairnStack) -> None:
    await stack.supervisor.stop("memory-embedder")
    await stack.start_service("memory-embedder", "cairn_memory.embedder")
    await stack.wait_ready()


@pytest.fixture
async def bursty_embedder(stack: CairnStack) -> AsyncIterator[str]:
    stack.config.service_env.update(BURSTY)
    await restart_embedder(stack)
    try:
        yield stack.http_url("memory-embedder")
    finally:
        for name in BURSTY:
            stack.config.service_env.pop(name, None)
        await restart_embedder(stack)


async def burst_wait_seconds(url: str) -> float:
    async with httpx.AsyncClient() as client:
        text = (await client.get(f"{url}/metrics")).text
    return sum(
        sample.value
        for family in text_string_to_metric_families(text)
        if family.name == "cairn_embedding_burst_wait_seconds"
        for sample in family.samples
        if sample.name.endswith("_total")
    )


async def test_a_write_burst_is_acknowledged_first_then_embedded(
    bursty_embedder: str, http: httpx.AsyncClient, tenant: TenantHandle
) -> None:
    key = await tenant.key("agent", "burst-writer")
    waited_before = await burst_wait_seconds(bursty_embedder)
    sem = asyncio.Semaphore(16)

    async def write(i: int) -> None:
        async with sem:
            response = await http.post(
                "/api/v1/memory", json={"text": f"burst fact {i} about the depot"}, headers=bearer(key)
            )
            assert response.status_code == 201, response.text

    await asyncio.gather(*(write(i) for i in range(WRITES)))
    burst_ended = time.monotonic()
    # Every write was acknowledged; the worker embeds them all once the burst is over, within its max wait
    # plus the drain (well under the minute this allows on a loaded CI machine).
    ready = 0
    while time.monotonic() - burst_ended < 60:
        page = await listed(http, key, limit=100)
        ready = sum(m["embedding_status"] == "ready" for m in page["data"])
        if ready == WRITES:
            break
        await asyncio.sleep(0.2)
    assert ready == WRITES
    assert await burst_wait_seconds(bursty_embedder) > waited_before
