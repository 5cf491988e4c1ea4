"""The structural guard catches queries on scoped tables that are not bound to the caller."""

import pytest
from sqlalchemy import delete, func, or_, select, update

from cairn_contracts.identity import Role
from cairn_scope import Scope, ScopeGuardError, check_scoped, scoped_delete, scoped_select, scoped_update
from cairn_scope.guard import final_froms
from cairn_storage.models import Memory, MemoryChunk, SessionMemory, Tenant

SCOPE = Scope(
    tenant_id="11111111-1111-1111-1111-111111111111",
    subject_id="agent-a",
    role=Role.agent,
    key_id="22222222-2222-2222-2222-222222222222",
)
ADMIN = SCOPE.model_copy(update={"role": Role.superadmin})


class TestCheckScoped:
    def test_helpers_build_bound_queries(self) -> None:
        scoped_select(Memory, SCOPE)
        scoped_update(Memory, SCOPE)
        scoped_delete(SessionMemory, SCOPE)

    def test_missing_subject_predicate_is_caught(self) -> None:
        with pytest.raises(ScopeGuardError, match="subject_id"):
            check_scoped(select(Memory).where(Memory.tenant_id == SCOPE.tenant_id), SCOPE)

    def test_missing_tenant_predicate_is_caught(self) -> None:
        with pytest.raises(ScopeGuardError, match="tenant_id"):
            check_scoped(select(Memory).where(Memory.subject_id == SCOPE.subject_id), SCOPE)

    def test_no_where_clause_is_caught(self) -> None:
        with pytest.raises(ScopeGuardError):
            check_scoped(select(func.count()).select_from(Memory), SCOPE)

    def test_predicate_inside_or_does_not_count(self) -> None:
        stmt = select(Memory).where(
            Memory.tenant_id == SCOPE.tenant_id,
            or_(Memory.subject_id == SCOPE.subject_id, Memory.source == "explicit"),
        )
        with pytest.raises(ScopeGuardError):
            check_scoped(stmt, SCOPE)

    def test_predicate_bound_to_another_subject_is_caught(self) -> None:
        stmt = select(Memory).where(Memory.tenant_id == SCOPE.tenant_id, Memory.subject_id == "agent-b")
        with pytest.raises(ScopeGuardError):
            check_scoped(stmt, SCOPE)

    def test_update_and_delete_are_checked(self) -> None:
        with pytest.raises(ScopeGuardError):
            check_scoped(update(Memory).where(Memory.tenant_id == SCOPE.tenant_id).values(text="x"), SCOPE)
        with pytest.raises(ScopeGuardError):
            check_scoped(delete(SessionMemory).where(SessionMemory.subject_id == SCOPE.subject_id), SCOPE)

    def test_unscoped_tables_pass(self) -> None:
        check_scoped(select(Tenant), SCOPE)

    def test_index_safe_subquery_needs_outer_subject_and_inner_tenant(self) -> None:
        inner = (
            select(Memory.id, Memory.subject_id)
            .where(Memory.tenant_id == SCOPE.tenant_id)
            .limit(50)
            .subquery("pool")
        )
        check_scoped(select(inner.c.id).where(inner.c.subject_id == SCOPE.subject_id), SCOPE)
        with pytest.raises(ScopeGuardError, match="subject_id"):
            check_scoped(select(inner.c.id), SCOPE)
        unbound = select(Memory.id, Memory.subject_id).limit(50).subquery("pool")
        with pytest.raises(ScopeGuardError, match="tenant_id"):
            check_scoped(select(unbound.c.id).where(unbound.c.subject_id == SCOPE.subject_id), SCOPE)

    def test_all_subjects_only_for_superadmin(self) -> None:
        scoped_select(Memory, ADMIN, all_subjects=True)
        with pytest.raises(ScopeGuardError):
            scoped_select(Memory, SCOPE, all_subjects=True)


class TestFinalFroms:
    """The guard's cheap FROM list must be exactly SQLAlchemy's own (it relies on private API)."""

    def test_matches_get_final_froms(self) -> None:
        pool = (
            select(Memory.id, Memory.subject_id).where(Memory.tenant_id == SCOPE.tenant_id).subquery("pool")
        )
        statements = [
            select(Memory),
            select(Memory.id, Tenant.name).where(Memory.tenant_id == Tenant.id),
            select(func.count()).select_from(Memory),
            select(MemoryChunk.memory_id).join(Memory, Memory.id == MemoryChunk.memory_id),
            select(pool.c.id).join(Memory, Memory.id == pool.c.id).where(pool.c.subject_id == "a"),
            select(Memory.id).where(Memory.id.in_(select(MemoryChunk.memory_id).scalar_subquery())),
            select(Memory.id).outerjoin(MemoryChunk, MemoryChunk.memory_id == Memory.id).group_by(Memory.id),
        ]
        for stmt in statements:
            assert [str(f) for f in final_froms(stmt)] == [str(f) for f in stmt.get_final_froms()]
