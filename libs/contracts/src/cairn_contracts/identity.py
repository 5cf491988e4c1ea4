"""Tenants, API keys, projects and whoami: REST bodies of the gateway's identity API."""

from datetime import datetime
from enum import StrEnum
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

Name = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200)]
Slug = Annotated[
    str,
    StringConstraints(strip_whitespace=True, min_length=1, max_length=100, pattern=r"^[a-z0-9][a-z0-9_.-]*$"),
]


class Role(StrEnum):
    agent = "agent"
    user = "user"
    orchestrator = "orchestrator"
    superadmin = "superadmin"


class TenantCreate(BaseModel):
    model_config = ConfigDict(extra="ignore")
    name: Name


class TenantPatch(BaseModel):
    model_config = ConfigDict(extra="ignore")
    name: Name | None = None
    memory_quota: Annotated[int, Field(ge=1, le=10_000_000)] | None = None
    promotion_budget_per_hour: Annotated[int, Field(ge=0, le=1_000_000)] | None = None
    rate_limit_per_second: Annotated[float, Field(gt=0, le=100_000)] | None = None
    rate_limit_burst: Annotated[int, Field(ge=1, le=1_000_000)] | None = None
    # Recall / search token bucket per key (null: CAIRN_READ_RATE_LIMIT_PER_SECOND / _BURST).
    read_rate_limit_per_second: Annotated[float, Field(gt=0, le=100_000)] | None = None
    read_rate_limit_burst: Annotated[int, Field(ge=1, le=1_000_000)] | None = None
    # Recalls that make a memory hot enough for the graduation sweep (null: CAIRN_GRADUATION_RECALL_THRESHOLD).
    graduation_recall_threshold: Annotated[int, Field(ge=1, le=1_000_000)] | None = None


class Tenant(BaseModel):
    id: str
    name: str
    memory_quota: int | None
    promotion_budget_per_hour: int | None
    rate_limit_per_second: float | None
    rate_limit_burst: int | None
    created_at: datetime
    graduation_recall_threshold: int | None = None
    read_rate_limit_per_second: float | None = None
    read_rate_limit_burst: int | None = None


class KeyCreate(BaseModel):
    """`tenant_id` is required for superadmin callers; tenant keys create keys in their own tenant only."""

    model_config = ConfigDict(extra="ignore")
    tenant_id: str | None = None
    role: Role
    agent_id: Annotated[str, StringConstraints(strip_whitespace=True, max_length=200)] | None = None
    name: Annotated[str, StringConstraints(strip_whitespace=True, max_length=200)] | None = None


class ApiKeyInfo(BaseModel):
    """A key as listed: never its secret."""

    id: str
    tenant_id: str | None
    role: Role
    agent_id: str | None
    name: str | None
    prefix: str
    created_at: datetime
    revoked_at: datetime | None


class CreatedKey(ApiKeyInfo):
    """Returned once, at creation: the only time the secret `key` is shown."""

    key: str


class WhoAmI(BaseModel):
    tenant_id: str | None
    subject_id: str
    role: Role
    agent_id: str | None
    key_id: str
    impersonating: bool = False


class ProjectCreate(BaseModel):
    model_config = ConfigDict(extra="ignore")
    name: Name
    slug: Slug
    repo_url: Annotated[str, StringConstraints(strip_whitespace=True, max_length=500)] | None = None


class Project(BaseModel):
    id: str
    tenant_id: str
    name: str
    slug: str
    repo_url: str | None
    created_at: datetime


class ProviderSettingsIn(BaseModel):
    """A tenant's own OpenAI-compatible endpoint (bring your own key). The key is stored encrypted."""

    model_config = ConfigDict(extra="ignore")
    base_url: Annotated[
        str, StringConstraints(strip_whitespace=True, max_length=500, pattern=r"^https?://\S+$")
    ]
    model: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200)]
    api_key: Annotated[str, StringConstraints(max_length=500)] | None = None


class TenantProvidersUpdate(BaseModel):
    """`PUT /api/v1/tenants/{id}/providers`: a kind given as null is removed; a kind left out is unchanged."""

    model_config = ConfigDict(extra="ignore")
    embedding: ProviderSettingsIn | None = None
    compiler: ProviderSettingsIn | None = None


class ProviderSettingsOut(BaseModel):
    base_url: str
    model: str
    has_api_key: bool


class TenantProvidersOut(BaseModel):
    embedding: ProviderSettingsOut | None
    compiler: ProviderSettingsOut | None
