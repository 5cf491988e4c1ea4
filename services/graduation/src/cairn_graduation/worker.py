"""Wiring: the Temporal worker and the sweep schedule."""

from datetime import timedelta

from temporalio.client import Client
from temporalio.worker import Worker

from cairn_contracts.graduation import SweepParams
from cairn_graduation.activities import GraduationActivities
from cairn_graduation.settings import GraduationSettings
from cairn_graduation.workflows import GraduateMemory, SweepGraduations
from cairn_observability.temporal import worker_interceptors
from cairn_servicekit.schedules import upsert_interval_schedule

SWEEP_SCHEDULE_ID = "cairn-graduation-sweep"


def sweep_params(settings: GraduationSettings) -> SweepParams:
    return SweepParams(
        recall_threshold=settings.graduation_recall_threshold,
        max_per_run=settings.graduation_max_per_run,
        scan_limit=settings.graduation_scan_limit,
        batch_size=settings.graduation_batch_size,
        batches_per_run=settings.graduation_batches_per_run,
        task_queue=settings.task_queue,
        propose_timeout_seconds=settings.graduation_propose_timeout_seconds,
    )


def build_worker(client: Client, settings: GraduationSettings, activities: GraduationActivities) -> Worker:
    return Worker(
        client,
        task_queue=settings.task_queue,
        interceptors=worker_interceptors(),
        workflows=[GraduateMemory, SweepGraduations],
        activities=[
            activities.load,
            activities.existing_article,
            activities.propose,
            activities.stamp,
            activities.tick_start,
            activities.claim_batch,
        ],
    )


async def ensure_sweep_schedule(client: Client, settings: GraduationSettings) -> None:
    """Create the sweep schedule, or bring an existing one to the configured interval and knobs."""
    await upsert_interval_schedule(
        client,
        SWEEP_SCHEDULE_ID,
        SweepGraduations.run,
        sweep_params(settings),
        task_queue=settings.task_queue,
        every=timedelta(seconds=settings.graduation_sweep_interval_seconds),
    )
