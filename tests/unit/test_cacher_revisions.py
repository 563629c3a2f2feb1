"""Consistent reads share asks for the current revision, and never an ask that
started before they arrived."""

from __future__ import annotations

import asyncio

import pytest

from services.cacher.revisions import CurrentRevisions


async def settle() -> None:
    """Let every task that can run, run."""
    for _ in range(5):
        await asyncio.sleep(0)


class Asks:
    """A storage whose revision is the number of the ask, released on demand."""

    def __init__(self) -> None:
        self.started = 0
        self.release = asyncio.Event()

    async def read(self) -> int:
        self.started += 1
        number = self.started
        await self.release.wait()
        return number


async def test_many_readers_share_a_few_asks() -> None:
    asks = Asks()
    revisions = CurrentRevisions(asks.read)
    readers = [asyncio.create_task(revisions.current()) for _ in range(16)]
    await settle()
    asks.release.set()
    got = await asyncio.gather(*readers)
    # The first two readers start an ask each; the other fourteen share the third.
    assert asks.started == 3
    assert got == [1, 2] + [3] * 14


async def test_a_reader_never_gets_an_ask_that_started_before_it_came() -> None:
    asks = Asks()
    revisions = CurrentRevisions(asks.read)
    first = asyncio.create_task(revisions.current())
    second = asyncio.create_task(revisions.current())
    await settle()
    assert asks.started == 2  # both in flight
    late = asyncio.create_task(revisions.current())
    await settle()
    assert asks.started == 2  # waits for the next ask, not one under way
    asks.release.set()
    assert (await first, await second, await late) == (1, 2, 3)


async def test_a_failed_ask_fails_its_readers_only() -> None:
    calls = 0

    async def read() -> int:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise ConnectionError("storage went away")
        return 42

    revisions = CurrentRevisions(read)
    with pytest.raises(ConnectionError):
        await revisions.current()
    assert await revisions.current() == 42
