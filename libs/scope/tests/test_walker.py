"""The statement walker classifies every bypass shape: bound ones pass with their scope, the rest raise."""

import uuid
from typing import Any

import pytest
from sqlalchemy import (
    bindparam,
    delete,
    exists,
    func,
    insert,
    literal,
    or_,
    select,
    text,
    true,
    union_all,
    update,
)
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.orm import aliased

from cairn_contracts.identity import Role
from cairn_scope import Scope, ScopeGuardError, check_scoped, scoped_select
from cairn_scope.walker import Bound, row_write_by_key, walk
from cairn_storage.models import Memory, MemoryChunk, SessionMemory, SessionPromotion, Tenant

T = "11111111-1111-1111-1111-111111111111"
OTHER = "33333333-3333-3333-3333-333333333333"
S = "agent-a"
BOUND = Bound(T, S)
ADMIN = Scope(tenant_id=T, subject_id=S, role=Role.superadmin, key_id=str(uuid.uuid4()))


def mine(entity: Any) -> Any:
    return (entity.tenant_id == T) & (entity.subject_id == S)


def refused(stmt: Any, match: str | None = None, params: list[dict[str, Any]] | None = None) -> None:
    with pytest.raises(ScopeGuardError, match=match):
        walk(stmt, params)


class TestPlainStatements:
    def test_unscoped_tables_are_not_classified(self) -> None:
        assert walk(select(Tenant).where(Tenant.name == "x")) is None
        assert walk(text("SELECT pg_advisory_xact_lock(1)")) is None
        assert walk("SELECT set_config('x', 'y', true)") is None

    def test_bound_select_yields_its_scope(self) -> None:
        assert walk(select(Memory).where(mine(Memory))) == BOUND

    def test_unbound_select_is_refused(self) -> None:
        refused(select(Memory), "tenant_id")
        refused(select(Memory).where(Memory.tenant_id == T), "subject_id")

    def test_predicate_under_or_does_not_count(self) -> None:
        refused(
            select(Memory).where(
                Memory.tenant_id == T, or_(Memory.subject_id == S, Memory.source == "explicit")
            )
        )

    def test_in_list_does_not_count(self) -> None:
        refused(select(Memory).where(Memory.tenant_id == T, Memory.subject_id.in_([S, "agent-b"])))

    def test_two_tenants_are_refused(self) -> None:
        stmt = (
            select(Memory.id)
            .where(mine(Memory))
            .union_all(select(Memory.id).where(Memory.tenant_id == OTHER, Memory.subject_id == S))
        )
        refused(stmt, "2 tenants")

    def test_unbound_bindparam_takes_the_execute_parameter(self) -> None:
        stmt = select(Memory).where(Memory.tenant_id == bindparam("t"), Memory.subject_id == bindparam("s"))
        assert walk(stmt, [{"t": T, "s": S}]) == BOUND
        refused(stmt, "2 tenants", [{"t": T, "s": S}, {"t": OTHER, "s": S}])


class TestNestedShapes:
    def test_cte_is_walked(self) -> None:
        cte = select(Memory.id).where(Memory.tenant_id == T).cte("c")  # no subject inside
        refused(select(cte.c.id), "subject_id")
        good = select(Memory.id).where(mine(Memory)).cte("c")
        assert walk(select(good.c.id)) == BOUND

    def test_from_subquery_is_walked(self) -> None:
        sub = select(Memory.id).where(Memory.subject_id == S).subquery()
        refused(select(sub.c.id), "tenant_id")

    def test_subject_bound_on_the_subquery_column_counts(self) -> None:
        # recall's index-safe shape: the tenant inside, the subject one level up.
        sub = select(Memory.id, Memory.subject_id).where(Memory.tenant_id == T).subquery()
        assert walk(select(sub.c.id).where(sub.c.subject_id == S)) == BOUND

    def test_exists_subquery_is_walked(self) -> None:
        leak = exists(select(MemoryChunk.memory_id).where(MemoryChunk.chunk_index == 1))
        refused(select(Tenant.id).where(leak), "memory_chunks")

    def test_in_subquery_is_walked(self) -> None:
        leak = select(SessionMemory.seq).where(SessionMemory.tenant_id == T)
        refused(select(Memory).where(mine(Memory), Memory.id.in_(leak)), "subject_id")

    def test_scalar_subquery_is_walked(self) -> None:
        count = select(func.count()).select_from(Memory).where(Memory.tenant_id == T).scalar_subquery()
        refused(select(Tenant.id, count), "subject_id")

    def test_correlated_subquery_of_a_bound_outer_row_passes(self) -> None:
        inner = select(func.count()).where(MemoryChunk.memory_id == Memory.id, mine(MemoryChunk))
        assert walk(select(Memory.id, inner.scalar_subquery()).where(mine(Memory))) == BOUND

    def test_correlated_subquery_trusting_the_outer_row_is_refused(self) -> None:
        inner = select(func.count()).where(MemoryChunk.memory_id == Memory.id)  # chunks unbound
        refused(select(Memory.id, inner.scalar_subquery()).where(mine(Memory)), "memory_chunks")

    def test_uncorrelated_scan_of_the_outer_table_is_refused(self) -> None:
        inner = select(func.count()).select_from(Memory).correlate(None)
        refused(select(Memory.id, inner.scalar_subquery()).where(mine(Memory)), "memories")

    def test_lateral_is_walked(self) -> None:
        lat = select(MemoryChunk.chunk_index).where(MemoryChunk.memory_id == Memory.id).lateral()
        refused(select(Memory.id, lat.c.chunk_index).where(mine(Memory)).join(lat, true()), "memory_chunks")
        good = (
            select(MemoryChunk.chunk_index)
            .where(MemoryChunk.memory_id == Memory.id, mine(MemoryChunk))
            .lateral()
        )
        stmt = select(Memory.id, good.c.chunk_index).where(mine(Memory)).join(good, true())
        assert walk(stmt) == BOUND

    def test_join_needs_every_scoped_side_bound(self) -> None:
        stmt = select(Memory.id).join(MemoryChunk, MemoryChunk.memory_id == Memory.id).where(mine(Memory))
        refused(stmt, "memory_chunks")
        on = (MemoryChunk.memory_id == Memory.id) & mine(MemoryChunk)
        assert walk(select(Memory.id).join(MemoryChunk, on).where(mine(Memory))) == BOUND

    def test_aliased_table_is_checked(self) -> None:
        other = aliased(Memory)
        refused(select(Memory.id).join(other, other.id == Memory.id).where(mine(Memory)), "memories")
        assert walk(select(other.id).where(other.tenant_id == T, other.subject_id == S)) == BOUND

    def test_union_members_are_walked(self) -> None:
        stmt = union_all(select(Memory.id).where(mine(Memory)), select(SessionMemory.seq))
        refused(stmt, "session_memories")

    def test_text_naming_a_scoped_table_without_its_scope_is_refused(self) -> None:
        refused(text("SELECT id FROM memories"), "tenant_id")
        refused(select(Tenant.id).where(text("id IN (SELECT tenant_id FROM memory_chunks)")), "raw SQL")
        refused("DELETE FROM session_memories", "raw SQL")
        refused(
            text("SELECT id FROM memories WHERE tenant_id = :tenant_id"), "subject_id", [{"tenant_id": T}]
        )

    def test_text_subquery_is_refused(self) -> None:
        sub = text("SELECT id FROM session_promotions").columns(Memory.id).subquery()
        refused(select(sub.c.id), "raw SQL")

    def test_text_declares_its_scope_in_its_parameters(self) -> None:
        # RLS, set from these values, holds the statement to them whatever the SQL does with them.
        sql = text("INSERT INTO memories (tenant_id, subject_id) VALUES (:tenant_id, :subject_id)")
        assert walk(sql, [{"tenant_id": T, "subject_id": S}]) == BOUND
        assert walk(sql.bindparams(tenant_id=T, subject_id=S)) == BOUND
        refused(sql, "2 tenants", [{"tenant_id": T, "subject_id": S}, {"tenant_id": OTHER, "subject_id": S}])
        assert walk(text("SELECT pg_advisory_xact_lock(1)")) is None


class TestWrites:
    def test_update_needs_its_table_bound(self) -> None:
        refused(update(Memory).where(Memory.id == uuid.uuid4()).values(confidence=0.5), "tenant_id")
        assert walk(update(Memory).where(mine(Memory)).values(confidence=0.5)) == BOUND

    def test_update_from_needs_the_from_table_bound(self) -> None:
        stmt = update(Memory).where(mine(Memory), Memory.id == SessionMemory.seq).values(confidence=0.5)
        refused(stmt, "session_memories")

    def test_update_cannot_move_a_row_to_another_scope(self) -> None:
        refused(update(Memory).where(mine(Memory)).values(tenant_id=OTHER), "2 tenants")
        refused(update(Memory).where(mine(Memory)).values(subject_id=Memory.text), "expression")

    def test_delete_needs_its_table_bound(self) -> None:
        refused(delete(SessionPromotion).where(SessionPromotion.session_id == "s"), "tenant_id")
        assert walk(delete(SessionPromotion).where(mine(SessionPromotion))) == BOUND

    def test_insert_values_must_name_the_scope(self) -> None:
        assert walk(insert(Memory).values(tenant_id=T, subject_id=S, text="x")) == BOUND
        refused(insert(Memory).values(text="x"), "tenant_id")

    def test_orm_insert_parameters_are_checked(self) -> None:
        assert walk(insert(Memory), [{"tenant_id": T, "subject_id": S}]) == BOUND
        refused(
            insert(Memory),
            "2 tenants",
            [{"tenant_id": T, "subject_id": S}, {"tenant_id": OTHER, "subject_id": S}],
        )

    def test_insert_select_is_walked(self) -> None:
        copy = select(Memory.tenant_id, Memory.subject_id, Memory.text).where(Memory.tenant_id == T)
        refused(insert(Memory).from_select(["tenant_id", "subject_id", "text"], copy), "subject_id")
        bound = select(literal(T), literal(S), Memory.text).where(mine(Memory))
        assert walk(insert(Memory).from_select(["tenant_id", "subject_id", "text"], bound)) == BOUND

    def test_on_conflict_insert_is_checked_like_an_insert(self) -> None:
        stmt = pg_insert(Memory).values(tenant_id=T, subject_id=S, text="x").on_conflict_do_nothing()
        assert walk(stmt) == BOUND


class TestOversight:
    def test_all_subjects_mark_comes_only_from_a_superadmin_check(self) -> None:
        stmt = scoped_select(Memory, ADMIN, all_subjects=True)
        assert walk(stmt) == Bound(T, None)
        assert walk(select(func.count()).select_from(stmt.subquery())) == Bound(T, None)
        refused(select(Memory).where(Memory.tenant_id == T), "subject_id")

    def test_check_scoped_statement_passes_the_walker(self) -> None:
        scope = ADMIN.model_copy(update={"role": Role.agent})
        assert walk(check_scoped(select(Memory).where(mine(Memory)), scope)) == BOUND


class TestRowWriteByKey:
    def test_orm_write_back_by_primary_key_is_recognised(self) -> None:
        mid = uuid.uuid4()
        assert row_write_by_key(update(Memory).where(Memory.id == mid).values(superseded_by=uuid.uuid4()))
        assert row_write_by_key(delete(Memory).where(Memory.id == mid))

    def test_anything_wider_is_not(self) -> None:
        assert not row_write_by_key(update(Memory).values(confidence=0.5))  # no WHERE at all
        assert not row_write_by_key(update(Memory).where(Memory.source == "x").values(confidence=0.5))
        assert not row_write_by_key(update(Memory).where(Memory.id == uuid.uuid4()).values(tenant_id=OTHER))
        assert not row_write_by_key(update(Tenant).where(Tenant.id == uuid.uuid4()).values(name="x"))
