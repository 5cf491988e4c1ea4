"""Reading and writing a tenant's provider settings."""

import uuid
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from cairn_contracts.identity import ProviderSettingsOut, TenantProvidersOut, TenantProvidersUpdate
from cairn_providers.secrets import SecretBox
from cairn_storage.models import TenantProvider

KINDS = ("embedding", "compiler")


@dataclass(frozen=True)
class ProviderConfig:
    base_url: str
    model: str
    # None: configured without a key (or one this deployment cannot decrypt). Never in a repr or a log.
    api_key: str | None = field(repr=False)


@dataclass(frozen=True)
class TenantProviders:
    embedding: ProviderConfig | None = None
    compiler: ProviderConfig | None = None


def _config(row: TenantProvider, kind: str, box: SecretBox | None) -> ProviderConfig | None:
    base_url = getattr(row, f"{kind}_base_url")
    if not base_url:
        return None
    token = getattr(row, f"{kind}_api_key")
    return ProviderConfig(
        base_url, getattr(row, f"{kind}_model"), box.decrypt(token) if token and box else None
    )


async def load_providers(session: AsyncSession, tenant_id: str, box: SecretBox | None) -> TenantProviders:
    row = await session.scalar(select(TenantProvider).where(TenantProvider.tenant_id == uuid.UUID(tenant_id)))
    if row is None:
        return TenantProviders()
    return TenantProviders(embedding=_config(row, "embedding", box), compiler=_config(row, "compiler", box))


def describe(row: TenantProvider | None) -> TenantProvidersOut:
    """The settings as an operator may see them: never the key, only whether one is set."""

    def one(kind: str) -> ProviderSettingsOut | None:
        if row is None or not getattr(row, f"{kind}_base_url"):
            return None
        return ProviderSettingsOut(
            base_url=getattr(row, f"{kind}_base_url"),
            model=getattr(row, f"{kind}_model"),
            has_api_key=bool(getattr(row, f"{kind}_api_key")),
        )

    return TenantProvidersOut(embedding=one("embedding"), compiler=one("compiler"))


async def save_providers(
    session: AsyncSession, tenant_id: str, update: TenantProvidersUpdate, box: SecretBox
) -> TenantProvidersOut:
    """Apply `update`: a kind given as null is removed, a kind left out is unchanged."""
    values: dict[str, Any] = {}
    for kind in KINDS:
        if kind not in update.model_fields_set:
            continue
        given = getattr(update, kind)
        values[f"{kind}_base_url"] = given.base_url if given else None
        values[f"{kind}_model"] = given.model if given else None
        values[f"{kind}_api_key"] = box.encrypt(given.api_key) if given and given.api_key else None
    stmt = insert(TenantProvider).values(tenant_id=uuid.UUID(tenant_id), **values)
    stmt = stmt.on_conflict_do_update(index_elements=["tenant_id"], set_={**values, "updated_at": func.now()})
    await session.execute(stmt)
    row = await session.scalar(select(TenantProvider).where(TenantProvider.tenant_id == uuid.UUID(tenant_id)))
    return describe(row)
