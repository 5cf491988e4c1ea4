"""The event loop of the request-path processes: uvloop (libuv) instead of asyncio's selector loop.

Measured on the write path (docs/performance.md): asyncio's loop spends a large share of each request in
Python-level socket and scheduling code that uvloop does in C. The Temporal workers keep asyncio's loop.
"""

import gc
from collections.abc import Coroutine
from typing import Any, TypeVar

import uvloop
from threadpoolctl import threadpool_limits

T = TypeVar("T")


def run(main: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run` on a uvloop loop."""
    return uvloop.run(main)


# Allocations between young-generation collections (CPython's default is 700). A request allocates
# hundreds of objects (pydantic models, SQLAlchemy results, NATS messages) that die young; collecting
# every 700 allocations walked them over and over.
GC_GEN0_THRESHOLD = 20_000


def single_threaded_blas() -> None:
    """numpy's OpenBLAS starts a thread per core for any product big enough (the knowledge service's
    10k x 384 vector copy, diversity's similarity matrices, promotion's classifier). In a service on a
    shared box those threads mostly wait to be scheduled: measured on 2 loaded cores, the knowledge copy's
    product took 8 ms with them and 0.3 ms on the calling thread alone. Services get their parallelism from
    concurrent requests and replicas, not from BLAS."""
    threadpool_limits(limits=1, user_api="blas")


def settle_gc() -> None:
    """Call once startup is done: everything built so far (modules, models, pools) moves to CPython's
    permanent generation, which no collection walks again, and young collections run less often."""
    gc.collect()
    gc.freeze()
    _, gen1, gen2 = gc.get_threshold()
    gc.set_threshold(GC_GEN0_THRESHOLD, gen1, gen2)
