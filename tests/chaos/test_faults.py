"""Fault injection under load: while agents write, append and recall, one process at a time is SIGKILLed
and the launcher restarts it. After recovery, every acknowledged write exists exactly once and embedded,
nothing is half-written, recall answers again within RECOVERY_SECONDS and in-flight promotions complete
once. Prints a table per fault.

CI runs the faults in CAIRN_CHAOS_FAULTS' default; `./task chaos` runs all of them.
"""

import asyncio
import os
import signal
import time
import uuid

import asyncpg
import httpx
import pytest
from pydantic_settings import BaseSettings, SettingsConfigDict
from temporalio.client import WorkflowExecutionStatus

from cairn_devstack.cairn import CairnStack
from cairn_promotion.workflows import PromoteSession
from tests.bus_helpers import temporal_client
from tests.chaos.helpers import new_agent
from tests.chaos.load import AgentLoad, Audit, audit

ALL_FAULTS = ("postgres", "nats", "temporal", "memory", "recall", "memory-embedder", "promotion")
RECOVERY_SECONDS = 60.0  # recall answers again within this long after the kill (stated bound)
LOAD_BEFORE_SECONDS = 3.0
LOAD_AFTER_SECONDS = 3.0


class ChaosSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CAIRN_CHAOS_", extra="ignore")
    faults: str = "memory,postgres"  # CI's share; `task chaos` sets all


FAULTS = [f.strip() for f in ChaosSettings().faults.split(",") if f.strip()]
RESULTS: dict[str, tuple[Audit, float, int]] = {}

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module", autouse=True)
def print_table() -> object:
    yield
    if RESULTS:
        lines = [
            "",
            f"{'fault':<16} {'acked':>6} {'lost':>5} {'dup':>4} {'half':>5} {'unacked-ok':>10} "
            f"{'recover s':>9} {'promoted':>8}",
        ]
        for fault, (a, seconds, promoted) in RESULTS.items():
            lines.append(
                f"{fault:<16} {a.acked:>6} {a.lost:>5} {a.duplicated:>4} {a.half_written:>5} "
                f"{a.unacked_complete:>10} {seconds:>9.1f} {promoted:>8}"
            )
        print("\n".join(lines))  # noqa: T201 - the chaos table is this module's report


async def first_recall_ok_after(load: AgentLoad, since: float, timeout: float) -> float:
    while time.monotonic() - since < timeout:
        if load.books.last_recall_ok > since:
            return load.books.last_recall_ok - since
        await asyncio.sleep(0.05)
    raise AssertionError(f"recall did not answer within {timeout} s")


@pytest.mark.parametrize("fault", FAULTS)
async def test_a_sigkill_under_load_loses_and_duplicates_nothing(
    chaos_stack: CairnStack, chaos_admin: str, fault: str
) -> None:
    assert fault in ALL_FAULTS, fault
    async with httpx.AsyncClient(base_url=chaos_stack.gateway_url) as http:
        tenant_id, key = await new_agent(http, chaos_admin)
        load = AgentLoad(http, key, f"chaos-{fault}")
        load.start()
        await asyncio.sleep(LOAD_BEFORE_SECONDS)
        session_id = f"promote-{uuid.uuid4().hex[:8]}"
        await load.promote(session_id)  # in flight when the kill lands (the worker embeds on start)
        victim = chaos_stack.supervisor.pids()[fault]
        killed_at = time.monotonic()
        os.kill(victim, signal.SIGKILL)
        await first_recall_ok_after(load, killed_at + 0.5, RECOVERY_SECONDS)
        recovered = time.monotonic() - killed_at
        await chaos_stack.wait_ready(timeout=RECOVERY_SECONDS)
        await asyncio.sleep(LOAD_AFTER_SECONDS)
        await load.stop()
    assert chaos_stack.supervisor.pids()[fault] != victim  # the launcher brought it back

    temporal = await temporal_client(chaos_stack)  # reads through the encrypted payload codec
    handle = temporal.get_workflow_handle_for(PromoteSession.run, load.books.promotions[session_id])
    result = await asyncio.wait_for(handle.result(), 120)
    assert (await handle.describe()).status == WorkflowExecutionStatus.COMPLETED
    db = await asyncpg.connect(chaos_stack.database_url)
    try:
        outcome = await audit(db, tenant_id, load.books)
        promoted = await db.fetch(
            "SELECT text FROM memories WHERE tenant_id = $1 AND source_session_id = $2",
            uuid.UUID(tenant_id),
            session_id,
        )
    finally:
        await db.close()
    RESULTS[fault] = (outcome, recovered, len(promoted))
    assert outcome.acked > 0
    assert load.books.recalls_ok > 0
    assert outcome.lost == 0, outcome
    assert outcome.duplicated == 0, outcome
    assert outcome.half_written == 0, outcome
    assert len(promoted) == result.promoted
    assert len({r["text"] for r in promoted}) == len(promoted)  # no promoted fact twice
