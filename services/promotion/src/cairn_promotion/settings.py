"""Promotion settings (env prefix CAIRN_). The TTL-window invariant is checked at start."""

from typing import Literal, Self

from pydantic import SecretStr, model_validator

from cairn_servicekit.settings import ServiceSettings


class PromotionSettings(ServiceSettings):
    task_queue: str = "cairn-promotion"
    compiler: Literal["offline", "openai"] = "offline"
    # The offline compiler's durable-fact decision: the shipped classifier (needs the local MiniLM) or the
    # hand-written rules. The hard safety rules apply either way.
    offline_decision: Literal["learned", "rules"] = "learned"
    compiler_openai_base_url: str | None = None
    compiler_openai_api_key: SecretStr | None = None
    compiler_openai_model: str | None = None
    compile_timeout_seconds: float = 30.0
    confidence_threshold: float = 0.6
    max_candidates: int = 20
    # Compiles per tenant per hour (a tenant's promotion_budget_per_hour overrides it).
    default_budget_per_hour: int = 60
    sweep_interval_seconds: int = 600
    sweep_window_seconds: int = 3600
    sweep_max_sessions: int = 200
    # Must equal the memory service's CAIRN_SESSION_DEFAULT_TTL_SECONDS: the sweep must see a session
    # before its turns expire.
    session_default_ttl_seconds: int = 7 * 24 * 3600

    @model_validator(mode="after")
    def _sweep_fits_in_ttl(self) -> Self:
        if not self.sweep_interval_seconds < self.sweep_window_seconds < self.session_default_ttl_seconds:
            raise ValueError(
                "promotion needs sweep_interval < sweep_window < session_ttl "
                f"(got {self.sweep_interval_seconds} < {self.sweep_window_seconds} < "
                f"{self.session_default_ttl_seconds})"
            )
        if self.compiler == "openai" and not (
            self.compiler_openai_base_url and self.compiler_openai_api_key and self.compiler_openai_model
        ):
            raise ValueError("compiler 'openai' needs compiler_openai_base_url, _api_key and _model")
        return self
