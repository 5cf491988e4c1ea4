"""The event loop of the request-path processes: uvloop (libuv) instead of asyncio's selector loop.

Measured on the write path (docs/performance.md): asyncio's loop spends a large share of each request in
Python-level socket and scheduling code that uvloop does in C. The Temporal workers keep asyncio's loop.
"""

from collections.abc import Coroutine
from typing import Any, TypeVar

import uvloop

T = TypeVar("T")


def run(main: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run` on a uvloop loop."""
    return uvloop.run(main)
