"""The embedding worker's burst gate: pure timing logic, with a scripted pending count."""

import asyncio
from collections.abc import Awaitable, Callable, Iterator

import pytest

from cairn_memory.burst import BurstGate

INTERVAL = 0.01


def counts(values: Iterator[int]) -> tuple[Callable[[], Awaitable[int]], list[int]]:
    """A `pending()` that returns the next value, and the list of values it returned."""
    seen: list[int] = []

    async def pending() -> int:
        seen.append(next(values))
        return seen[-1]

    return pending, seen


def growing(step: int) -> Iterator[int]:
    value = 0
    while True:
        yield value
        value += step


@pytest.mark.asyncio
async def test_a_disabled_gate_never_waits_or_asks() -> None:
    pending, seen = counts(growing(1000))
    assert await BurstGate(0, 5.0, INTERVAL).wait(pending, asyncio.Event()) == 0.0
    assert seen == []


@pytest.mark.asyncio
async def test_a_backlog_that_does_not_grow_is_embedded_after_one_sample() -> None:
    pending, seen = counts(iter([500, 500, 500]))
    waited = await BurstGate(100, 5.0, INTERVAL).wait(pending, asyncio.Event())
    assert seen == [500, 500]
    assert waited < 1.0


@pytest.mark.asyncio
async def test_the_rate_is_measured_over_the_time_that_passed() -> None:
    # 1 more per 0.01 s sample is 100/s at best (a sample is never early): under a 200/s rate, no burst
    pending, seen = counts(iter([0, 1, 2]))
    await BurstGate(200, 5.0, INTERVAL).wait(pending, asyncio.Event())
    assert seen == [0, 1]
    # 10 more per sample is up to 1,000/s: a 100/s burst until the count stops moving
    pending, seen = counts(iter([0, 10, 20, 20]))
    await BurstGate(100, 5.0, INTERVAL).wait(pending, asyncio.Event())
    assert seen == [0, 10, 20, 20]


@pytest.mark.asyncio
async def test_a_burst_is_waited_out_until_it_stops() -> None:
    pending, seen = counts(iter([0, 50, 100, 150, 150]))
    waited = await BurstGate(100, 5.0, INTERVAL).wait(pending, asyncio.Event())
    assert seen == [0, 50, 100, 150, 150]
    assert 3 * INTERVAL * 0.9 <= waited < 1.0


@pytest.mark.asyncio
async def test_an_endless_burst_waits_at_most_max_wait_then_embeds_as_long() -> None:
    gate = BurstGate(100, 0.1, INTERVAL)
    pending, _ = counts(growing(1000))
    waited = await gate.wait(pending, asyncio.Event())
    assert 0.1 <= waited < 0.5
    # right after a full wait the worker embeds: no wait, no sample
    pending, seen = counts(growing(1000))
    assert await gate.wait(pending, asyncio.Event()) == 0.0
    assert seen == []
    await asyncio.sleep(0.12)  # the embedding period is over: the next burst is waited on again
    assert await gate.wait(pending, asyncio.Event()) >= 0.1


@pytest.mark.asyncio
async def test_stopping_ends_a_wait() -> None:
    stop = asyncio.Event()
    pending, _ = counts(growing(1000))
    task = asyncio.create_task(BurstGate(100, 30.0, 0.05).wait(pending, stop))
    await asyncio.sleep(0.12)
    stop.set()
    assert await asyncio.wait_for(task, 1.0) < 1.0
