"""Subject derivation: the only rule that turns a key into a (tenant, subject) pair."""

from dataclasses import dataclass

from cairn_contracts.errors import ImpersonationRequired, SubjectUnresolvable
from cairn_contracts.identity import Role
from cairn_scope.model import Scope


@dataclass(frozen=True)
class KeyIdentity:
    """What the gateway knows about a verified key."""

    key_id: str
    tenant_id: str | None
    role: Role
    agent_id: str | None


def derive_subject(key: KeyIdentity) -> str:
    """An agent key with a non-blank agent_id acts as that agent; every other key acts as itself.

    Every key an agent rotates through therefore shares one memory scope.

    Raises:
        SubjectUnresolvable: the key has neither a usable agent_id nor an id.
    """
    if key.role is Role.agent and key.agent_id and key.agent_id.strip():
        return key.agent_id.strip()
    if key.key_id and key.key_id.strip():
        return key.key_id
    raise SubjectUnresolvable()


def derive_scope(key: KeyIdentity, impersonate_tenant: str | None) -> Scope:
    """Build the request scope; the impersonation header counts only for superadmin keys.

    Raises:
        ImpersonationRequired: a superadmin called a scoped path without naming a tenant.
        SubjectUnresolvable: a tenant key without a tenant, or without a subject.
    """
    subject = derive_subject(key)
    if key.role is Role.superadmin:
        if not impersonate_tenant:
            raise ImpersonationRequired()
        return Scope(tenant_id=impersonate_tenant, subject_id=subject, role=key.role, key_id=key.key_id)
    if not key.tenant_id:
        raise SubjectUnresolvable("the key belongs to no tenant")
    return Scope(tenant_id=key.tenant_id, subject_id=subject, role=key.role, key_id=key.key_id)
