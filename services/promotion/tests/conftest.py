"""Shared fixtures of the promotion service's unit tests."""

from collections.abc import Callable

import pytest

from cairn_promotion.offline import _candidate, as_memory
from cairn_promotion.text import Clause


def _memory_of(said: str) -> str | None:
    candidate = _candidate(Clause(said, said, "user"), (0.95, ["fact"]), None)
    memory = None if candidate is None else as_memory(candidate)
    return None if memory is None else memory.text


@pytest.fixture
def memory_of() -> Callable[[str], str | None]:
    """What one user sentence becomes once the decision keeps it (confidently): its memory, or None when the
    rules after the decision drop it."""
    return _memory_of
