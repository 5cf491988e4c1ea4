"""`EXPLAIN` of a SQLAlchemy statement exactly as it would run (tests and benchmarks read plans with it)."""

from typing import Any

from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.expression import ClauseElement, Executable

__all__ = ["Explain"]


class Explain(Executable, ClauseElement):
    """`session.execute(Explain(stmt))` yields the plan's lines; `options` e.g. "ANALYZE, COSTS OFF"."""

    inherit_cache = False

    def __init__(self, statement: Any, options: str = "") -> None:
        self.statement = statement
        self.explain_options = options


@compiles(Explain, "postgresql")
def _explain(element: Explain, compiler: Any, **kw: Any) -> str:
    options = f"({element.explain_options}) " if element.explain_options else ""
    return f"EXPLAIN {options}" + str(compiler.process(element.statement, **kw))
