"""Wiring: compiler choice, the Temporal worker, and the sweep schedule."""

from datetime import timedelta

from temporalio.client import Client
from temporalio.worker import Worker

from cairn_contracts.promotion import SweepParams
from cairn_observability.temporal import worker_interceptors
from cairn_promotion.activities import PromotionActivities
from cairn_promotion.compiler import Compiler
from cairn_promotion.llm_compiler import OpenAICompatibleCompiler
from cairn_promotion.offline import OfflineCompiler
from cairn_promotion.settings import PromotionSettings
from cairn_promotion.workflows import PromoteSession, SweepSessions
from cairn_servicekit.schedules import upsert_interval_schedule

SWEEP_SCHEDULE_ID = "cairn-promotion-sweep"


def build_compiler(settings: PromotionSettings) -> Compiler:
    """The deployment's default compiler. Blocking (it may load the local embedder): call it from a thread.

    Raises:
        RuntimeError: The learned decision is configured but its artifact or the local model is missing.
    """
    if settings.compiler == "openai":
        assert settings.compiler_openai_base_url
        assert settings.compiler_openai_api_key
        assert settings.compiler_openai_model
        return OpenAICompatibleCompiler(
            settings.compiler_openai_base_url,
            settings.compiler_openai_api_key.get_secret_value(),
            settings.compiler_openai_model,
            timeout=settings.compile_timeout_seconds,
        )
    if settings.offline_decision == "rules":
        return OfflineCompiler()
    from cairn_promotion.learned import load_default_decision

    decision = load_default_decision()
    if decision is None:
        raise RuntimeError("the learned durable-fact decision cannot load (artifact or local MiniLM missing)")
    return OfflineCompiler(decision)


def build_worker(client: Client, settings: PromotionSettings, activities: PromotionActivities) -> Worker:
    return Worker(
        client,
        task_queue=settings.task_queue,
        interceptors=worker_interceptors(),
        workflows=[PromoteSession, SweepSessions],
        activities=[
            activities.snapshot,
            activities.compile,
            activities.persist,
            activities.advance_watermark,
            activities.finish_run,
            activities.release_run,
            activities.sweep_candidates,
            activities.reserve,
        ],
    )


async def ensure_sweep_schedule(client: Client, settings: PromotionSettings) -> None:
    """Create the sweep schedule, or bring an existing one to the configured interval."""
    params = SweepParams(
        confidence_threshold=settings.confidence_threshold,
        max_candidates=settings.max_candidates,
        compile_timeout_seconds=settings.compile_timeout_seconds,
        task_queue=settings.task_queue,
    )
    await upsert_interval_schedule(
        client,
        SWEEP_SCHEDULE_ID,
        SweepSessions.run,
        params,
        task_queue=settings.task_queue,
        every=timedelta(seconds=settings.sweep_interval_seconds),
    )
