"""The current revision for many consistent reads at once.

A consistent read from cache first asks storage for etcd's current revision,
then waits for its cache to reach it. Readers that arrive together can share
one such ask, provided it starts after each of them arrived: then it sees every
write that finished before any of them began, which is all linearizability
asks. So arrivals wait for the next ask (at most two are in flight), and each
ask answers everyone who was waiting when it started: at 16 concurrent reads,
a handful of storage calls instead of sixteen.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Awaitable, Callable

MAX_IN_FLIGHT = 2


class CurrentRevisions:
    def __init__(self, read: Callable[[], Awaitable[int]]) -> None:
        self._read = read
        # What the readers waiting for the next ask will get.
        self._waiting: asyncio.Future[int] | None = None
        self._in_flight = 0
        self._asks: set[asyncio.Task[None]] = set()

    async def current(self) -> int:
        """A revision no older than the newest write finished before the call."""
        if self._waiting is None:
            self._waiting = asyncio.get_running_loop().create_future()
            # Read, so that one left behind by readers who all gave up is not logged.
            self._waiting.add_done_callback(lambda f: f.cancelled() or f.exception())
        waiting = self._waiting
        if self._in_flight < MAX_IN_FLIGHT:
            self._ask()
        return await asyncio.shield(waiting)

    def _ask(self) -> None:
        answers, self._waiting = self._waiting, None
        assert answers is not None
        self._in_flight += 1
        # The ask belongs to no single reader's trace.
        task = asyncio.create_task(self._answer(answers), context=contextvars.Context())
        self._asks.add(task)
        task.add_done_callback(self._asks.discard)

    async def _answer(self, answers: asyncio.Future[int]) -> None:
        try:
            revision = await self._read()
        except asyncio.CancelledError:
            answers.cancel()
            raise
        except Exception as e:
            answers.set_exception(e)
        else:
            answers.set_result(revision)
        finally:
            self._in_flight -= 1
            if self._waiting is not None and self._in_flight < MAX_IN_FLIGHT:
                self._ask()
