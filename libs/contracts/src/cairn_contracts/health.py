"""Health replies on `cairn.v1.<service>.health`."""

from typing import Literal

from pydantic import BaseModel


class ComponentHealth(BaseModel):
    name: str
    status: Literal["ok", "down"]
    detail: str | None = None


class HealthReply(BaseModel):
    service: str
    status: Literal["ok", "down"]
    components: list[ComponentHealth] = []


class ReadyReport(BaseModel):
    """Body of `/readyz`: every component with its state."""

    status: Literal["ok", "down"]
    components: dict[str, ComponentHealth]
