"""How every registry controller runs: rounds, for ever. A round that fails is
logged and tried again, so neither storage trouble nor a bug stops a
controller for good.

A controller whose informers tell it of every change that matters runs `on_change`:
a round when something changed (as kube's controllers work off their informers'
events), and a resync now and then; one whose work also waits on time or on
objects no informer of its shows it runs `every`, a round an interval.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

from strata import telemetry
from strata.api.errors import StatusError
from strata.storage import StorageError

# How often an informer-driven controller goes through everything regardless.
RESYNC_SECONDS = 30.0

log = telemetry.get_logger("strata.registry.rounds")


async def _one(what: str, round_: Callable[[], Awaitable[object]]) -> object:
    """round_'s answer, or None when it failed (logged)."""
    try:
        return await round_()
    except (StatusError, StorageError) as e:
        log.warning("controller round failed", controller=what, error=e.message)
    except Exception:
        log.exception("controller round failed", controller=what)
    return None


async def every(interval: float, what: str, round_: Callable[[], Awaitable[None]]) -> None:
    while True:
        await _one(what, round_)
        await asyncio.sleep(interval)


async def on_change(
    changed: asyncio.Event,
    what: str,
    round_: Callable[[], Awaitable[bool]],
    *,
    retry: float,
    resync: float = RESYNC_SECONDS,
) -> None:
    """round_ now, then whenever changed is set (a change during a round brings
    another) and at least every resync seconds. A round that answers False (it
    left work that only time finishes) or fails is run again after retry
    seconds."""
    while True:
        changed.clear()
        settled = await _one(what, round_)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(resync if settled is True else retry):
                await changed.wait()
