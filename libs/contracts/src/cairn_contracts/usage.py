"""Per-tenant usage: the REST body of `GET /api/v1/tenants/{id}/usage`."""

from datetime import date

from pydantic import BaseModel, ConfigDict, Field


class UsageCounts(BaseModel):
    writes: int = 0  # long-term memories written (explicit, superseding and promoted rows)
    session_bytes: int = 0  # UTF-8 bytes of session turns appended
    recalls: int = 0  # memory recalls and merged recalls
    embedded_tokens: int = 0  # estimated: one token per four characters embedded
    compile_calls: int = 0  # promotion compiles
    live_rows: int = 0  # live long-term memories at the day's last snapshot


class UsageDay(UsageCounts):
    day: date


class TenantUsage(BaseModel):
    """Days with any recorded use, oldest first. In `totals` the counters are summed over the range and
    `live_rows` is the latest day's snapshot (rows are stored, not consumed)."""

    model_config = ConfigDict(populate_by_name=True)

    tenant_id: str
    from_: date = Field(alias="from", serialization_alias="from")
    to: date
    days: list[UsageDay]
    totals: UsageCounts
