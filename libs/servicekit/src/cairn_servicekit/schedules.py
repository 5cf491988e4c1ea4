"""Temporal schedules a worker owns: created at startup, brought to the deployed configuration if they exist."""

from datetime import timedelta

from temporalio.client import (
    Client,
    Schedule,
    ScheduleActionStartWorkflow,
    ScheduleAlreadyRunningError,
    ScheduleIntervalSpec,
    ScheduleOverlapPolicy,
    SchedulePolicy,
    ScheduleSpec,
    ScheduleUpdate,
    ScheduleUpdateInput,
)
from temporalio.types import MethodAsyncSingleParam, ParamType, ReturnType, SelfType


async def upsert_interval_schedule(
    client: Client,
    schedule_id: str,
    workflow: MethodAsyncSingleParam[SelfType, ParamType, ReturnType],
    arg: ParamType,
    *,
    task_queue: str,
    every: timedelta,
) -> None:
    """Run `workflow(arg)` on `task_queue` every `every`, skipping a tick while the previous run is going.

    The workflow id is the schedule id. If the schedule already exists it is replaced with this one rather
    than left as it is, so a redeploy with a new interval or new knobs in `arg` takes effect.
    """
    schedule = Schedule(
        action=ScheduleActionStartWorkflow(workflow, arg, id=schedule_id, task_queue=task_queue),
        spec=ScheduleSpec(intervals=[ScheduleIntervalSpec(every=every)]),
        policy=SchedulePolicy(overlap=ScheduleOverlapPolicy.SKIP),
    )
    try:
        await client.create_schedule(schedule_id, schedule)
    except ScheduleAlreadyRunningError:

        def replace(_: ScheduleUpdateInput) -> ScheduleUpdate:
            return ScheduleUpdate(schedule=schedule)

        await client.get_schedule_handle(schedule_id).update(replace)
