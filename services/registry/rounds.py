"""How every registry controller runs: one round, then the next after an
interval, for ever. A round that fails is logged and the next one tries again,
so neither storage trouble nor a bug stops a controller for good."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from strata import telemetry
from strata.api.errors import StatusError
from strata.storage import StorageError

log = telemetry.get_logger("strata.registry.rounds")


async def every(interval: float, what: str, round_: Callable[[], Awaitable[None]]) -> None:
    while True:
        try:
            await round_()
        except (StatusError, StorageError) as e:
            log.warning("controller round failed", controller=what, error=e.message)
        except Exception:
            log.exception("controller round failed", controller=what)
        await asyncio.sleep(interval)
