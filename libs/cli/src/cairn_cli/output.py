"""Rendering: a table (or key/value list) for people, JSON for scripts (`--json`)."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel
from rich.console import Console
from rich.table import Table

_out = Console(soft_wrap=True)
_err = Console(stderr=True, soft_wrap=True)


def plain(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


def emit_json(value: Any) -> None:
    sys.stdout.write(json.dumps(plain(value), indent=2, ensure_ascii=False) + "\n")


def _cell(value: Any, width: int = 80) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.3f}"
    if isinstance(value, list | dict):
        value = json.dumps(value, ensure_ascii=False)
    text = str(value)
    return text if len(text) <= width else text[: width - 1] + "…"


def table(rows: Sequence[dict[str, Any]], columns: Sequence[str], title: str | None = None) -> None:
    grid = Table(title=title, show_lines=False)
    for column in columns:
        grid.add_column(column)
    for row in rows:
        grid.add_row(*(_cell(row.get(c)) for c in columns))
    _out.print(grid)


def record(value: Any) -> None:
    data = plain(value)
    grid = Table(show_header=False, box=None)
    grid.add_column(style="bold")
    grid.add_column()
    for key, item in data.items():
        grid.add_row(key, _cell(item, 200))
    _out.print(grid)


def note(message: str) -> None:
    _err.print(message, markup=False, highlight=False)
