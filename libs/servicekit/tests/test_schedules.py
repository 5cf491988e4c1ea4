"""`upsert_interval_schedule` against the stack's real Temporal: the first call creates the schedule, a second
call (a redeploy with another interval and other knobs) replaces it in place instead of failing or adding one."""

import asyncio
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta

import pytest
from temporalio import workflow
from temporalio.api.common.v1 import Payload
from temporalio.client import Client, ScheduleActionStartWorkflow, ScheduleOverlapPolicy

from cairn_devstack.cairn import CairnStack
from cairn_servicekit.schedules import upsert_interval_schedule


@workflow.defn(name="ServicekitScheduleProbe")
class Probe:
    """Never runs here: the schedule's hour-long interval does not come round during the test."""

    @workflow.run
    async def run(self, knob: str) -> str:
        return knob


@pytest.fixture
async def temporal(stack: CairnStack) -> Client:
    return await Client.connect(stack.temporal_address, namespace=stack.temporal_namespace)


@pytest.fixture
async def schedule_id(temporal: Client) -> AsyncIterator[str]:
    sid = f"test-servicekit-schedule-{uuid.uuid4().hex[:10]}"
    try:
        yield sid
    finally:
        await temporal.get_schedule_handle(sid).delete()


async def listed(temporal: Client, prefix: str, expected: int) -> list[str]:
    """Ids of the listed schedules starting with `prefix`, waiting out visibility's lag for `expected`."""
    ids: list[str] = []
    for _ in range(50):
        ids = [s.id async for s in await temporal.list_schedules() if s.id.startswith(prefix)]
        if len(ids) >= expected:
            break
        await asyncio.sleep(0.2)
    return ids


async def test_a_second_upsert_replaces_the_interval_and_argument_of_the_one_schedule(
    temporal: Client, schedule_id: str
) -> None:
    queue = f"q-{schedule_id}"
    await upsert_interval_schedule(
        temporal, schedule_id, Probe.run, "first", task_queue=queue, every=timedelta(hours=1)
    )
    await upsert_interval_schedule(
        temporal, schedule_id, Probe.run, "second", task_queue=queue, every=timedelta(hours=2)
    )

    described = await temporal.get_schedule_handle(schedule_id).describe()
    assert [i.every for i in described.schedule.spec.intervals] == [timedelta(hours=2)]
    assert described.schedule.policy.overlap == ScheduleOverlapPolicy.SKIP
    action = described.schedule.action
    assert isinstance(action, ScheduleActionStartWorkflow)
    assert (action.workflow, action.id, action.task_queue) == ("ServicekitScheduleProbe", schedule_id, queue)
    payloads = [arg for arg in action.args if isinstance(arg, Payload)]
    assert await temporal.data_converter.decode(payloads, [str]) == ["second"]

    assert await listed(temporal, schedule_id, 1) == [schedule_id]
