"""The structural guard: a query on a scoped table must be bound to the caller's tenant and subject.

Isolation is the explicit (tenant_id, subject_id) predicate on every query, not a database backstop,
so every store builds its statements here and every statement is checked before it runs. A check
inspects the *outermost* WHERE clause: predicates nested inside OR, NOT or a subquery do not count.
It is the first of three lines: `cairn_scope.walker` checks the whole statement again on every execute
(the engine hook in `cairn_storage.scope_hook`), and PostgreSQL row-level security is the last.
"""

from collections.abc import Iterator
from typing import Any, TypeVar

from sqlalchemy import Delete, Select, Update, and_, delete, select, update
from sqlalchemy.sql import operators
from sqlalchemy.sql.elements import BinaryExpression, BindParameter, BooleanClauseList, ColumnElement
from sqlalchemy.sql.selectable import Join, Subquery, TableClause

from cairn_scope.model import Scope

SCOPED_TABLES = frozenset({"memories", "memory_chunks", "session_memories", "session_promotions"})

ALL_SUBJECTS_OPTION = "cairn_all_subjects"  # superadmin oversight, checked by check_scoped

Stmt = TypeVar("Stmt", Select[Any], Update, Delete)


class ScopeGuardError(RuntimeError):
    """A query on a scoped table is missing its tenant or subject bound: a programming error."""


def _conjuncts(clause: ColumnElement[Any] | None) -> Iterator[ColumnElement[Any]]:
    if clause is None:
        return
    if isinstance(clause, BooleanClauseList) and clause.operator is operators.and_:
        for sub in clause.clauses:
            yield from _conjuncts(sub)
    else:
        yield clause


def _key(from_obj: Any) -> str:
    # Names, not identities: the ORM hands out annotated copies of the same table.
    return str(getattr(from_obj, "name", None) or id(from_obj))


def _bound(clause: ColumnElement[Any] | None, scope: Scope) -> set[tuple[str, str]]:
    """(from-object name, column name) pairs bound by `col == :value` to this scope's values."""
    expected = {"tenant_id": scope.tenant_id, "subject_id": scope.subject_id}
    found: set[tuple[str, str]] = set()
    for part in _conjuncts(clause):
        if not isinstance(part, BinaryExpression) or part.operator is not operators.eq:
            continue
        column, value = part.left, part.right
        name = getattr(column, "name", None)
        if name not in expected or not isinstance(value, BindParameter):
            continue
        if value.value is not None and str(value.value) == expected[name]:
            found.add((_key(getattr(column, "table", None)), name))
    return found


def final_froms(stmt: Select[Any]) -> list[Any]:
    """`stmt.get_final_froms()` without its cost. SQLAlchemy gets there by compiling the whole statement
    with a throwaway compiler, uncached (about 1 ms per call, most of a recall's CPU with several guarded
    statements); the FROM list needs only the statement's compile state, which a compiler that was given
    no statement still builds. `libs/scope/tests/test_guard.py` pins it to `get_final_froms()`."""
    dialect = stmt._default_dialect()  # type: ignore[no-untyped-call]  # SQLAlchemy leaves it unannotated
    compiler = dialect.statement_compiler(dialect, None)
    return list(stmt._compile_state_factory(stmt, compiler)._get_display_froms())


def _leaves(from_obj: Any) -> Iterator[Any]:
    if isinstance(from_obj, Join):
        yield from _leaves(from_obj.left)
        yield from _leaves(from_obj.right)
    else:
        yield from_obj


def _base_name(from_obj: Any) -> str | None:
    element = getattr(from_obj, "element", from_obj)  # an aliased table points at its table
    return element.name if isinstance(element, TableClause) else None


def _check(froms: list[Any], where: ColumnElement[Any] | None, scope: Scope, *, need_subject: bool) -> None:
    bound = _bound(where, scope)
    for top in froms:
        for leaf in _leaves(top):
            if isinstance(leaf, Subquery):
                inner = leaf.element
                if not isinstance(inner, Select):
                    continue
                scoped_inner = any(
                    _base_name(f) in SCOPED_TABLES for t in final_froms(inner) for f in _leaves(t)
                )
                if not scoped_inner:
                    continue
                # The inner query keeps subject off to stay index-safe; it must still bind the tenant.
                _check(final_froms(inner), inner.whereclause, scope, need_subject=False)
                if need_subject and (_key(leaf), "subject_id") not in bound:
                    raise ScopeGuardError("subquery over a scoped table lacks an outer subject_id bound")
                continue
            name = _base_name(leaf)
            if name not in SCOPED_TABLES:
                continue
            if (_key(leaf), "tenant_id") not in bound:
                raise ScopeGuardError(f"query on {name} lacks a bound tenant_id predicate")
            if need_subject and (_key(leaf), "subject_id") not in bound:
                raise ScopeGuardError(f"query on {name} lacks a bound subject_id predicate")


def check_scoped(stmt: Stmt, scope: Scope, *, all_subjects: bool = False) -> Stmt:
    """Raise ScopeGuardError unless every scoped table in `stmt` is bound to the scope; return `stmt`.

    Args:
        stmt: a SELECT, UPDATE or DELETE.
        scope: the verified request scope.
        all_subjects: tenant-wide oversight; allowed only for a superadmin scope.
    """
    if all_subjects and not scope.is_superadmin:
        raise ScopeGuardError("only a superadmin scope may read across subjects")
    froms = final_froms(stmt) if isinstance(stmt, Select) else [stmt.table]
    _check(froms, stmt.whereclause, scope, need_subject=not all_subjects)
    # The engine hook's walker accepts a block without a subject only when it carries this mark.
    return stmt.execution_options(**{ALL_SUBJECTS_OPTION: True}) if all_subjects else stmt


def _predicates(entity: Any, scope: Scope, all_subjects: bool) -> ColumnElement[bool]:
    if all_subjects:
        return entity.tenant_id == scope.tenant_id  # type: ignore[no-any-return]
    return and_(entity.tenant_id == scope.tenant_id, entity.subject_id == scope.subject_id)


def scoped_select(entity: Any, scope: Scope, *, all_subjects: bool = False) -> Select[Any]:
    """`SELECT entity WHERE tenant_id = :t AND subject_id = :s` (tenant only for superadmin oversight)."""
    return check_scoped(
        select(entity).where(_predicates(entity, scope, all_subjects)), scope, all_subjects=all_subjects
    )


def scoped_update(entity: Any, scope: Scope) -> Update:
    return check_scoped(update(entity).where(_predicates(entity, scope, False)), scope)


def scoped_delete(entity: Any, scope: Scope, *, all_subjects: bool = False) -> Delete:
    return check_scoped(
        delete(entity).where(_predicates(entity, scope, all_subjects)), scope, all_subjects=all_subjects
    )
