"""Strings PostgreSQL cannot store: the one definition every input check uses.

PostgreSQL `text` and `jsonb` refuse U+0000, and a lone UTF-16 surrogate (which JSON's `\\udXXX` escapes
can smuggle into a Python `str`) cannot be encoded as UTF-8 at all. Both are refused as a 422 at the edge,
wherever they appear: a body field, a JSON key, a query parameter, a path segment, a header.
"""

from collections.abc import Iterator
from typing import Any

from pydantic_core import PydanticCustomError

NUL = "\x00"


def unstorable_reason(value: str) -> str | None:
    """Why `value` cannot be stored, or None when it can."""
    if NUL in value:
        return "must not contain NUL characters"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "must be valid Unicode (no unpaired surrogate)"
    return None


def find_unstorable(value: Any, where: str = "body") -> tuple[str, str] | None:
    """The first (location, reason) of an unstorable string in a JSON value (keys included), or None."""
    for location, text in _strings(value, where):
        if (reason := unstorable_reason(text)) is not None:
            return location, reason
    return None


def _strings(value: Any, where: str) -> Iterator[tuple[str, str]]:
    # Iterative walk: a deeply nested body must not exhaust the interpreter stack.
    stack: list[tuple[str, Any]] = [(where, value)]
    while stack:
        location, item = stack.pop()
        if isinstance(item, str):
            yield location, item
        elif isinstance(item, dict):
            for key, child in item.items():
                if isinstance(key, str):
                    yield f"{location}.<key>", key
                stack.append((f"{location}.{key}", child))
        elif isinstance(item, list):
            stack.extend((f"{location}.{i}", child) for i, child in enumerate(item))


def clean_text(value: Any) -> Any:
    """A pydantic BeforeValidator: refuse an unstorable string as `validation_error`."""
    if isinstance(value, str) and (reason := unstorable_reason(value)) is not None:
        raise PydanticCustomError("validation_error", "text " + reason)
    return value
