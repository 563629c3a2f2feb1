"""The CPU-heavy steps of a write on a large object (its managed fields, the
strategy's checks, a patch's application) run on a worker thread, so the
registry's event loop keeps answering while they run: a NodePort Service with
10,000 ports costs seconds of managed-fields work, and every other request
would wait for it. The interpreter hands the loop its turn every few
milliseconds, so other requests go on, slower, instead of stopping. Small
objects, nearly every write, stay on the loop: a thread hop costs more than
their checks do."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import ParamSpec, TypeVar

# Bodies and stored objects from this size on are worked on off the loop.
OFFLOAD_BYTES = 128 * 1024

P = ParamSpec("P")
T = TypeVar("T")


async def run(size: int, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """fn(*args, **kwargs), on a worker thread when size (the bytes of the
    object it works on) is large; the context (trace, requester) goes along."""
    if size < OFFLOAD_BYTES:
        return fn(*args, **kwargs)
    return await asyncio.to_thread(fn, *args, **kwargs)
