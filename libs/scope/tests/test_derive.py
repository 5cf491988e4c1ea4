"""Subject derivation follows the reference exactly."""

import pytest

from cairn_contracts.errors import ImpersonationRequired, SubjectUnresolvable
from cairn_contracts.identity import Role
from cairn_scope import KeyIdentity, derive_scope, derive_subject

TENANT = "11111111-1111-1111-1111-111111111111"


class TestDeriveSubject:
    def test_agent_with_agent_id_is_the_agent(self) -> None:
        assert derive_subject(KeyIdentity("k1", TENANT, Role.agent, "planner")) == "planner"

    @pytest.mark.parametrize("agent_id", [None, "", "   "])
    def test_agent_without_agent_id_is_the_key(self, agent_id: str | None) -> None:
        assert derive_subject(KeyIdentity("k1", TENANT, Role.agent, agent_id)) == "k1"

    @pytest.mark.parametrize("role", [Role.user, Role.orchestrator, Role.superadmin])
    def test_other_roles_are_the_key_even_with_agent_id(self, role: Role) -> None:
        assert derive_subject(KeyIdentity("k1", TENANT, role, "planner")) == "k1"

    def test_unresolvable_subject_is_refused(self) -> None:
        with pytest.raises(SubjectUnresolvable):
            derive_subject(KeyIdentity("", TENANT, Role.user, None))


class TestDeriveScope:
    def test_superadmin_needs_a_tenant(self) -> None:
        with pytest.raises(ImpersonationRequired):
            derive_scope(KeyIdentity("k1", None, Role.superadmin, None), None)
        scope = derive_scope(KeyIdentity("k1", None, Role.superadmin, None), TENANT)
        assert (scope.tenant_id, scope.subject_id) == (TENANT, "k1")

    def test_tenant_key_ignores_impersonation(self) -> None:
        scope = derive_scope(
            KeyIdentity("k1", TENANT, Role.agent, "a"), "99999999-9999-9999-9999-999999999999"
        )
        assert scope.tenant_id == TENANT

    def test_tenant_key_without_tenant_is_unresolvable(self) -> None:
        with pytest.raises(SubjectUnresolvable):
            derive_scope(KeyIdentity("k1", None, Role.agent, "a"), None)
