"""When the embedding worker holds off: while a write burst arrives, the cores go to acknowledging it.

At nice 10 and under SCHED_IDLE the worker still took ~0.8 cpu-ms per write during a 64-agent burst on two
cores: it runs whenever a core idles for a moment, and then competes with the request paths for caches and
memory bandwidth. With the worker paused, the same burst ran 526 and 608 writes/s against 454 and 477
(`bench/write_cpu.py`, docs/performance.md, sixth round). So after a full batch (a backlog: maybe a
burst) the worker samples its consumer's pending count; while it grows faster than `rate` messages a
second, the worker waits, at most `max_wait` seconds at a time. After a wait that long it embeds for at
least as long before it waits again, so under a load that never stops it still gets half the time, and
embedding lag during a burst is bounded by `max_wait` plus the backlog's own drain.
"""

import asyncio
import time
from collections.abc import Awaitable, Callable


class BurstGate:
    def __init__(
        self,
        rate: float,
        max_wait: float,
        interval: float = 0.25,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """`rate`: pending messages per second that count as a burst (0 never waits)."""
        self.rate = rate
        self.max_wait = max_wait
        self.interval = interval
        self._clock = clock
        self._embed_until = float("-inf")  # after a full wait, no new wait before this

    async def wait(self, pending: Callable[[], Awaitable[int]], stop: asyncio.Event) -> float:
        """Wait while `pending()` grows at `rate` or faster; the seconds waited (0: no burst)."""
        if self.rate <= 0 or self.max_wait <= 0 or self._clock() < self._embed_until:
            return 0.0
        started = sampled = self._clock()
        last = await pending()
        while not stop.is_set():
            try:
                await asyncio.wait_for(stop.wait(), self.interval)
            except TimeoutError:
                pass
            current = await pending()
            now = self._clock()
            waited = now - started
            # The rate over the time that really passed (a sample is a NATS round trip late, or more).
            if current - last < self.rate * (now - sampled):
                return waited
            last, sampled = current, now
            if waited >= self.max_wait:
                self._embed_until = self._clock() + self.max_wait
                return waited
        return self._clock() - started
