"""The Scope every service request carries."""

from pydantic import BaseModel, ConfigDict

from cairn_contracts.identity import Role


class Scope(BaseModel):
    """The isolation boundary of a request: (tenant_id, subject_id), derived from the caller's key.

    Attributes:
        tenant_id: the tenant the request acts in (for superadmin: the impersonated tenant).
        subject_id: the memory owner inside the tenant.
        role: the key's role; services allow oversight (all subjects) only for superadmin.
        key_id: the key that made the request, for audit.
    """

    model_config = ConfigDict(frozen=True)

    tenant_id: str
    subject_id: str
    role: Role
    key_id: str

    @property
    def is_superadmin(self) -> bool:
        return self.role is Role.superadmin
