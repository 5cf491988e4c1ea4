"""The statement walker: which (tenant, subject) a whole statement is bound to, or why it is refused.

`check_scoped` checks the statement a store builds; this walker checks what actually reaches the
database (the engine hook in `cairn_storage.scope_hook` runs it on every execute). It visits every
query block of a statement: CTEs, subqueries in FROM, EXISTS / IN / scalar subqueries, LATERAL,
UNION members, UPDATE ... FROM, DELETE ... USING, INSERT ... SELECT and ON CONFLICT. Each block that
reads or writes a scoped table must bind that table's `tenant_id` (and `subject_id`) with `col = :value`
in its own WHERE or JOIN ... ON conjuncts; a subject bound one level up on the subquery's column also
counts (the index-safe shape recall uses). Every bound value in the statement must name one scope.

Whatever it cannot classify on a scoped table is refused: a predicate under OR, a bound `IN` list, a
correlated subquery that trusts the outer row. Raw SQL (`text()`) naming a scoped table cannot be parsed:
it must name its scope in `:tenant_id` / `:subject_id` parameters, and row-level security (set from
them) is what holds it there. Paths that legitimately cross subjects declare themselves
(`cairn_maintenance`) instead; the hook audits them.
"""

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy.sql import operators
from sqlalchemy.sql.dml import Delete, Insert, Update
from sqlalchemy.sql.elements import (
    BinaryExpression,
    BindParameter,
    ClauseElement,
    ColumnClause,
    Label,
    TextClause,
)
from sqlalchemy.sql.selectable import (
    AliasedReturnsRows,
    CompoundSelect,
    Exists,
    FromClause,
    Join,
    Lateral,
    Select,
    TableClause,
)

from cairn_scope.guard import ALL_SUBJECTS_OPTION, SCOPED_TABLES, ScopeGuardError, _conjuncts, _key

_SCOPED_NAME = re.compile(r"\b(" + "|".join(sorted(SCOPED_TABLES)) + r")\b", re.IGNORECASE)
_BOUNDARIES = (Select, CompoundSelect, Exists, AliasedReturnsRows, Insert, Update, Delete)


@dataclass(frozen=True)
class Bound:
    """The scope a statement is bound to; `subject_id` None means every subject (superadmin oversight)."""

    tenant_id: str
    subject_id: str | None


def _scoped_name(from_obj: Any) -> str | None:
    element = getattr(from_obj, "element", from_obj)  # an aliased table points at its table
    if isinstance(element, TableClause) and element.name in SCOPED_TABLES:
        return str(element.name)
    return None


def _leaves(from_obj: Any, ons: list[Any]) -> Iterator[Any]:
    if isinstance(from_obj, Join):
        ons.append(from_obj.onclause)
        yield from _leaves(from_obj.left, ons)
        yield from _leaves(from_obj.right, ons)
    else:
        yield from_obj


def _value(bind: BindParameter[Any], params: Mapping[str, Any]) -> str | None:
    value = bind.effective_value if bind.callable is not None else bind.value
    if value is None:
        value = params.get(bind.key)
    return None if value is None else str(value)


class _Walk:
    def __init__(self, params: list[Mapping[str, Any]]) -> None:
        self.params = params or [{}]
        self.tenants: set[str] = set()
        self.subjects: set[str] = set()
        self.all_subjects = False
        self.touched = False
        # Subjects bound on a subquery's column by its outer block, keyed by the subquery's element.
        self.outer_subject: dict[int, str] = {}

    def values(self, bind: BindParameter[Any]) -> list[str | None]:
        return [_value(bind, p) for p in self.params]

    def bound(self, clauses: Iterable[Any]) -> dict[tuple[str, str], set[str]]:
        """(from-object name, column) -> values bound by `col = :value` among the conjuncts."""
        found: dict[tuple[str, str], set[str]] = {}
        for clause in clauses:
            for part in _conjuncts(clause):
                if not isinstance(part, BinaryExpression) or part.operator is not operators.eq:
                    continue
                column, value = part.left, part.right
                if isinstance(column, BindParameter):
                    column, value = value, column
                name = getattr(column, "name", None)
                if name not in ("tenant_id", "subject_id") or not isinstance(value, BindParameter):
                    continue
                vals = self.values(value)
                if any(v is None for v in vals):
                    continue
                found.setdefault((_key(getattr(column, "table", None)), name), set()).update(
                    v for v in vals if v is not None
                )
        return found

    def check_block(
        self,
        block: Any,
        froms: list[Any],
        where: list[Any],
        options: Mapping[str, Any],
        correlated: frozenset[str],
    ) -> None:
        ons: list[Any] = []
        leaves = [leaf for top in froms for leaf in _leaves(top, ons)]
        bound = self.bound([*where, *ons])
        all_subjects = bool(options.get(ALL_SUBJECTS_OPTION))
        for leaf in leaves:
            if isinstance(leaf, AliasedReturnsRows) and not isinstance(leaf.element, TableClause):
                subjects = bound.get((_key(leaf), "subject_id"))
                if subjects:
                    self.subjects |= subjects
                    for member in _selects(leaf.element):
                        self.outer_subject[id(member)] = next(iter(subjects))
                continue
            name = _scoped_name(leaf)
            if name is None or _key(leaf) in correlated:
                continue  # not scoped, or the outer row's table, bound where it is read
            self.touched = True
            tenants = bound.get((_key(leaf), "tenant_id"))
            if not tenants:
                raise ScopeGuardError(f"query on {name} lacks a bound tenant_id predicate")
            self.tenants |= tenants
            subjects = bound.get((_key(leaf), "subject_id"))
            if subjects:
                self.subjects |= subjects
            elif all_subjects:
                self.all_subjects = True
            elif id(block) not in self.outer_subject:
                raise ScopeGuardError(f"query on {name} lacks a bound subject_id predicate")

    def check_text(self, binds: Mapping[str, BindParameter[Any]]) -> None:
        """Raw SQL on a scoped table: its text cannot be parsed, so it must name its scope in the
        parameters `:tenant_id` and `:subject_id`; row-level security, set from those values, then holds
        the statement to that scope in the database whatever the text does with them."""
        self.touched = True
        for column in ("tenant_id", "subject_id"):
            bind = binds.get(column)
            values = [
                p[column] if p.get(column) is not None else (bind.value if bind is not None else None)
                for p in self.params
            ]
            if any(v is None for v in values):
                raise ScopeGuardError(f"raw SQL naming a scoped table lacks a :{column} parameter")
            (self.tenants if column == "tenant_id" else self.subjects).update(str(v) for v in values)

    def check_written(self, table: Any, rows: list[Mapping[str, Any]], where: str) -> None:
        """The tenant and subject a write stores must be bound values of the scope."""
        name = _scoped_name(table)
        if name is None:
            return
        self.touched = True
        for row in rows:
            for column in ("tenant_id", "subject_id"):
                if column not in row:
                    if where == "insert":
                        raise ScopeGuardError(f"insert into {name} does not bind {column}")
                    continue
                value = row[column]
                if isinstance(value, Label):
                    value = value.element
                if isinstance(value, BindParameter):
                    values = self.values(value)
                elif where == "insert" and isinstance(value, ColumnClause) and _scoped_name(value.table):
                    continue  # INSERT ... SELECT copying a bound scoped row's own column
                elif value is _FROM_PARAMS:
                    values = [None if p.get(column) is None else str(p[column]) for p in self.params]
                else:
                    raise ScopeGuardError(f"{where} on {name} sets {column} to an expression")
                if any(v is None for v in values):
                    raise ScopeGuardError(f"{where} on {name} sets {column} to NULL")
                (self.tenants if column == "tenant_id" else self.subjects).update(
                    v for v in values if v is not None
                )


_FROM_PARAMS = object()  # a column the ORM fills from the execute parameters


def _selects(element: Any) -> Iterator[Select[Any]]:
    if isinstance(element, AliasedReturnsRows):
        yield from _selects(element.element)
    elif isinstance(element, Select):
        yield element
    elif isinstance(element, CompoundSelect):
        for member in element.selects:
            yield from _selects(member)


def _from_of(target: Any) -> Any:
    clause = getattr(target, "__clause_element__", None)
    return clause() if clause is not None else target


def _select_froms(select: Select[Any]) -> tuple[list[Any], list[Any]]:
    """A SELECT's FROM list and JOIN ... ON clauses, read from the statement itself.

    `get_final_froms()` would compile ORM statements (milliseconds); this walks the explicit FROM
    list, `.join()` targets, and the tables the columns and WHERE name at this level. A table named
    only through an outer row's column comes back too: the caller treats it as correlated.
    """
    froms: dict[str, Any] = {}
    ons: list[Any] = []
    for item in select._from_obj:
        froms.setdefault(_key(item) + str(id(item)), item)
    for target, onclause, left, _flags in select._setup_joins:
        for part in (target, left):
            if part is not None:
                part = _from_of(part)
                if isinstance(part, FromClause):
                    froms.setdefault(_key(part) + str(id(part)), part)
        if isinstance(onclause, ClauseElement):
            ons.append(onclause)
    implicit: list[Any] = []
    for column in select._raw_columns:
        column = _from_of(column)
        if isinstance(column, FromClause):
            froms.setdefault(_key(column) + str(id(column)), column)
        else:
            implicit.append(column)
    named = {_key(leaf) for top in froms.values() for leaf in _leaves(top, ons)}
    for table in _local_tables([*implicit, *select._where_criteria, *ons]):
        if _key(table) not in named:
            froms.setdefault(_key(table), table)
    return list(froms.values()), ons


def _local_tables(clauses: Iterable[Any]) -> list[FromClause]:
    """Tables a DML WHERE refers to at its own level (UPDATE ... FROM / DELETE ... USING)."""
    found: dict[str, FromClause] = {}
    stack = [c for c in clauses if c is not None]
    while stack:
        element = stack.pop()
        if isinstance(element, _BOUNDARIES):
            continue
        if isinstance(element, ColumnClause) and isinstance(element.table, FromClause):
            found.setdefault(_key(element.table), element.table)
            continue
        stack.extend(element.get_children())
    return list(found.values())


def _rows(stmt: Insert | Update, params: list[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    if stmt._multi_values:
        return [{_column_name(k): v for k, v in row.items()} for rows in stmt._multi_values for row in rows]  # type: ignore[union-attr]
    rows: dict[str, Any] = {_column_name(k): v for k, v in (stmt._values or {}).items()}
    for p in params:
        for column in ("tenant_id", "subject_id"):
            if column in p and column not in rows:
                rows[column] = _FROM_PARAMS
    return [rows]


def _column_name(key: Any) -> str:
    return str(getattr(key, "key", None) or getattr(key, "name", None) or key)


def _insert_select_rows(stmt: Insert) -> list[Mapping[str, Any]]:
    select = stmt.select
    names = [_column_name(c) for c in stmt._select_names or []]
    members = list(_selects(select))
    rows: list[Mapping[str, Any]] = []
    for member in members:
        columns = list(member.selected_columns)
        rows.append(dict(zip(names, columns, strict=False)))
    return rows


def walk(stmt: Any, params: list[Mapping[str, Any]] | None = None) -> Bound | None:
    """The scope `stmt` is bound to; None when it touches no scoped table. Raises ScopeGuardError.

    Args:
        stmt: any executable: a Core/ORM statement, a `text()` clause or a raw SQL string.
        params: the parameter sets it is executed with (values of unbound `bindparam`s, ORM inserts).
    """
    state = _Walk(params or [])
    if isinstance(stmt, str):
        if _SCOPED_NAME.search(stmt):
            state.check_text({})
    else:
        _visit(stmt, frozenset(), state)
    if not state.touched:
        return None
    if len(state.tenants) != 1:
        raise ScopeGuardError(f"statement binds {len(state.tenants)} tenants, not one")
    if len(state.subjects) > 1:
        raise ScopeGuardError(f"statement binds {len(state.subjects)} subjects, not one")
    if not state.subjects and not state.all_subjects:
        raise ScopeGuardError("statement binds no subject_id")
    subject = None if state.all_subjects or not state.subjects else next(iter(state.subjects))
    return Bound(next(iter(state.tenants)), subject)


def _visit(element: Any, enclosing: frozenset[str], state: _Walk, lateral: bool = False) -> None:
    """Pre-order, so an outer block is checked (and its subject noted) before its subqueries.

    `enclosing` names the tables an inner block may correlate to (already checked one level up):
    scalar, EXISTS / IN subqueries and LATERAL correlate; a FROM subquery or a CTE does not.
    """
    if isinstance(element, TextClause):
        if _SCOPED_NAME.search(element.text):
            state.check_text(element._bindparams)
    elif isinstance(element, Select):
        froms, ons = _select_froms(element)
        correlated = enclosing if element._auto_correlate else frozenset()
        where = [element.whereclause, *ons]
        state.check_block(element, froms, where, element.get_execution_options(), correlated)
        enclosing = enclosing | {_key(leaf) for top in froms for leaf in _leaves(top, [])}
    elif isinstance(element, Update | Delete):
        where = list(element._where_criteria)
        froms = [element.table, *(t for t in _local_tables(where) if _key(t) != _key(element.table))]
        state.check_block(element, froms, where, element.get_execution_options(), frozenset())
        if isinstance(element, Update):
            state.check_written(element.table, _rows(element, state.params), "update")
        enclosing = frozenset(_key(f) for f in froms)
    elif isinstance(element, Insert):
        rows = _insert_select_rows(element) if element.select is not None else _rows(element, state.params)
        state.check_written(element.table, rows, "insert")
    if isinstance(element, TableClause | ColumnClause | BindParameter):
        return  # leaves: a table's own children are its columns and constraints, never a query
    if isinstance(element, AliasedReturnsRows) and not isinstance(element, Lateral) and not lateral:
        enclosing = frozenset()  # a derived table or CTE sees no outer row
    for child in element.get_children():
        _visit(child, enclosing, state, lateral=isinstance(element, Lateral))


def row_write_by_key(stmt: Any) -> bool:
    """An ORM unit-of-work write: UPDATE / DELETE of one scoped row by primary key alone, not moving it.

    The row was loaded earlier in the same transaction by a bound statement, so the hook lets it inherit
    that transaction's scope (which row-level security then enforces); with no scope set it is refused.
    """
    if not isinstance(stmt, Update | Delete) or _scoped_name(stmt.table) is None:
        return False
    keys = {c.name for c in getattr(stmt.table, "primary_key", [])}
    where = [part for clause in stmt._where_criteria for part in _conjuncts(clause)]
    if not where:
        return False
    for part in where:
        if not isinstance(part, BinaryExpression) or part.operator is not operators.eq:
            return False
        if getattr(part.left, "name", None) not in keys or not isinstance(part.right, BindParameter):
            return False
    if isinstance(stmt, Update):
        return not {"tenant_id", "subject_id"} & {_column_name(k) for k in (stmt._values or {})}
    return True
