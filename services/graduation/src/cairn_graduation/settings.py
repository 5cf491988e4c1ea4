"""Graduation settings (env prefix CAIRN_).

The other two hotness knobs live where they act and are not repeated here: the relevance floor a recall
must clear to count (`CAIRN_HOT_SCORE_FLOOR`, recall service) and the per-memory bump cooldown
(`CAIRN_HOT_COOLDOWN_SECONDS`, memory service).
"""

from typing import Self

from pydantic import Field, model_validator

from cairn_servicekit.settings import ServiceSettings


class GraduationSettings(ServiceSettings):
    task_queue: str = "cairn-graduation"
    # A live memory with at least this many counted recalls is hot (a tenant's
    # graduation_recall_threshold overrides it).
    graduation_recall_threshold: int = Field(default=3, ge=1)
    # At most this many graduations per sweep tick, over at most this many tenants (round-robin).
    graduation_max_per_run: int = Field(default=50, ge=1)
    graduation_scan_limit: int = Field(default=500, ge=1)
    graduation_sweep_interval_seconds: int = Field(default=3600, ge=1)
    # Children per sweep batch, and batches per workflow run before continue-as-new (bounded history).
    graduation_batch_size: int = Field(default=50, ge=1, le=500)
    graduation_batches_per_run: int = Field(default=4, ge=1, le=50)
    # One call to the novelty gate (the knowledge service embeds the article on the way).
    graduation_propose_timeout_seconds: float = Field(default=30.0, gt=0)
    # How long an on-demand graduation waits for its workflow before answering 503.
    graduation_wait_seconds: float = Field(default=25.0, gt=0)

    @model_validator(mode="after")
    def _batch_fits(self) -> Self:
        if self.graduation_batch_size > self.graduation_max_per_run:
            self.graduation_batch_size = self.graduation_max_per_run
        return self
