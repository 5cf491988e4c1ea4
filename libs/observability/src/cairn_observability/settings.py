"""Telemetry settings. Built in each process's entry point, never at import time."""

from typing import Literal

from pydantic import AliasChoices, Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class TelemetrySettings(BaseSettings):
    """Tracing is off unless an OTLP endpoint is configured, in Cairn's variable or OpenTelemetry's own."""

    model_config = SettingsConfigDict(env_prefix="CAIRN_", extra="ignore")

    # Base URL of an OTLP/HTTP receiver (`http://collector:4318`); spans go to `<base>/v1/traces`.
    otel_exporter_otlp_endpoint: str | None = None
    # OpenTelemetry's standard variables: when set, the exporter reads them (and their headers) itself.
    otel_standard_endpoint: str | None = Field(
        default=None,
        validation_alias=AliasChoices("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"),
    )
    otel_sdk_disabled: bool = Field(default=False, validation_alias="OTEL_SDK_DISABLED")
    # json: one JSON object per line (production); console: human-readable lines (`task up`).
    log_format: Literal["json", "console"] = "json"
    log_level: str = "INFO"

    @property
    def tracing_enabled(self) -> bool:
        return not self.otel_sdk_disabled and bool(
            self.otel_exporter_otlp_endpoint or self.otel_standard_endpoint
        )

    def traces_endpoint(self) -> str | None:
        """The explicit traces URL for Cairn's variable; None lets the exporter read OTEL_* itself."""
        if self.otel_exporter_otlp_endpoint:
            return self.otel_exporter_otlp_endpoint.rstrip("/") + "/v1/traces"
        return None
