"""client-go's work queues for controllers, on asyncio.

WorkQueue: an item added while it waits is not added twice; an item added
while a worker holds it goes back once the worker calls done(); get() waits
for an item and raises ShutDown once the queue is shut down and drained.
DelayingQueue adds add_after. RateLimitingQueue adds add_rate_limited, which
waits as long as its rate limiter says (client-go's default: per item, 5 ms
doubling up to 1000 s, and overall at most 10 per second with bursts of 100),
forget() to reset an item's failures, and num_requeues()."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Hashable
from typing import Protocol


class ShutDown(Exception):
    """get() on a queue that is shut down and empty."""


class RateLimiter(Protocol):
    def when(self, item: Hashable) -> float: ...
    def forget(self, item: Hashable) -> None: ...
    def num_requeues(self, item: Hashable) -> int: ...


class ItemExponentialFailureRateLimiter:
    """base * 2^failures seconds for an item, at most cap."""

    def __init__(self, base: float = 0.005, cap: float = 1000.0) -> None:
        self.base, self.cap = base, cap
        self._failures: dict[Hashable, int] = {}

    def when(self, item: Hashable) -> float:
        failures = self._failures.get(item, 0)
        self._failures[item] = failures + 1
        return float(min(self.cap, self.base * 2**failures))

    def forget(self, item: Hashable) -> None:
        self._failures.pop(item, None)

    def num_requeues(self, item: Hashable) -> int:
        return self._failures.get(item, 0)


class BucketRateLimiter:
    """A token bucket shared by all items: qps, with bursts of burst."""

    def __init__(self, qps: float = 10.0, burst: int = 100) -> None:
        self.qps, self.burst = qps, burst
        self._tokens = float(burst)
        self._last = time.monotonic()

    def when(self, item: Hashable) -> float:
        now = time.monotonic()
        self._tokens = min(self.burst, self._tokens + (now - self._last) * self.qps)
        self._last = now
        self._tokens -= 1
        return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    def forget(self, item: Hashable) -> None:
        pass

    def num_requeues(self, item: Hashable) -> int:
        return 0


class MaxOfRateLimiter:
    """The longest wait any of several limiters asks for."""

    def __init__(self, *limiters: RateLimiter) -> None:
        self.limiters = limiters

    def when(self, item: Hashable) -> float:
        return max(limiter.when(item) for limiter in self.limiters)

    def forget(self, item: Hashable) -> None:
        for limiter in self.limiters:
            limiter.forget(item)

    def num_requeues(self, item: Hashable) -> int:
        return max(limiter.num_requeues(item) for limiter in self.limiters)


def default_controller_rate_limiter() -> RateLimiter:
    return MaxOfRateLimiter(ItemExponentialFailureRateLimiter(), BucketRateLimiter())


class WorkQueue:
    """See the module docstring."""

    def __init__(self) -> None:
        self._queue: list[Hashable] = []
        self._dirty: set[Hashable] = set()
        self._processing: set[Hashable] = set()
        self._shutting_down = False
        self._ready = asyncio.Event()

    def __len__(self) -> int:
        return len(self._queue)

    @property
    def shutting_down(self) -> bool:
        return self._shutting_down

    def add(self, item: Hashable) -> None:
        if self._shutting_down or item in self._dirty:
            return
        self._dirty.add(item)
        if item in self._processing:
            return  # done() puts it back
        self._queue.append(item)
        self._ready.set()

    async def get(self) -> Hashable:
        while not self._queue:
            if self._shutting_down:
                raise ShutDown()
            self._ready.clear()
            await self._ready.wait()
        item = self._queue.pop(0)
        self._processing.add(item)
        self._dirty.discard(item)
        return item

    def done(self, item: Hashable) -> None:
        self._processing.discard(item)
        if item in self._dirty:
            self._queue.append(item)
            self._ready.set()

    def shutdown(self) -> None:
        self._shutting_down = True
        self._ready.set()


class DelayingQueue(WorkQueue):
    def __init__(self) -> None:
        super().__init__()
        self._waiting: dict[Hashable, tuple[float, asyncio.TimerHandle]] = {}

    def add_after(self, item: Hashable, delay: float) -> None:
        """Add item once delay seconds have passed (the earliest of several asks)."""
        if self.shutting_down:
            return
        if delay <= 0:
            self.add(item)
            return
        loop = asyncio.get_running_loop()
        at = loop.time() + delay
        waiting = self._waiting.get(item)
        if waiting is not None:
            if waiting[0] <= at:
                return
            waiting[1].cancel()
        self._waiting[item] = (at, loop.call_at(at, self._due, item))

    def _due(self, item: Hashable) -> None:
        self._waiting.pop(item, None)
        self.add(item)

    def shutdown(self) -> None:
        for _, handle in self._waiting.values():
            handle.cancel()
        self._waiting.clear()
        super().shutdown()


class RateLimitingQueue(DelayingQueue):
    def __init__(self, rate_limiter: RateLimiter | None = None) -> None:
        super().__init__()
        self.rate_limiter = rate_limiter or default_controller_rate_limiter()

    def add_rate_limited(self, item: Hashable) -> None:
        self.add_after(item, self.rate_limiter.when(item))

    def forget(self, item: Hashable) -> None:
        self.rate_limiter.forget(item)

    def num_requeues(self, item: Hashable) -> int:
        return self.rate_limiter.num_requeues(item)
