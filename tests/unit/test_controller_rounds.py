"""An informer-driven controller's rounds: one at the start, one per change
(however many changes came during a round), again after the retry interval
when a round left work or failed, and a resync when nothing changes."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import pytest

from services.registry.controllers import rounds
from strata.api import errors


class Rounds:
    """A controller's round that answers what it is told to, counting its runs."""

    def __init__(self) -> None:
        self.runs = 0
        self.answers: list[bool | Exception] = []
        self.ran = asyncio.Event()

    async def __call__(self) -> bool:
        self.runs += 1
        self.ran.set()
        answer = self.answers.pop(0) if self.answers else True
        if isinstance(answer, Exception):
            raise answer
        return answer

    async def next_run(self, seconds: float = 5) -> int:
        self.ran.clear()
        await asyncio.wait_for(self.ran.wait(), seconds)
        return self.runs


async def quiet_for(seconds: float, round_: Rounds) -> bool:
    """Whether no round ran for that long."""
    before = round_.runs
    await asyncio.sleep(seconds)
    return round_.runs == before


@pytest.fixture
async def controller() -> AsyncIterator[Callable[..., tuple[asyncio.Event, Rounds]]]:
    tasks: list[asyncio.Task[None]] = []

    def start(*, retry: float = 0.01, resync: float = 60) -> tuple[asyncio.Event, Rounds]:
        changed, round_ = asyncio.Event(), Rounds()
        tasks.append(
            asyncio.create_task(
                rounds.on_change(changed, "test", round_, retry=retry, resync=resync)
            )
        )
        return changed, round_

    yield start
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


async def test_a_round_at_the_start_then_one_per_change(
    controller: Callable[..., tuple[asyncio.Event, Rounds]],
) -> None:
    changed, round_ = controller()
    assert await round_.next_run() == 1
    assert await quiet_for(0.1, round_)
    changed.set()
    assert await round_.next_run() == 2
    assert await quiet_for(0.1, round_)


async def test_changes_during_a_round_bring_one_more() -> None:
    changed, release = asyncio.Event(), asyncio.Event()
    runs = 0

    async def held_first() -> bool:
        nonlocal runs
        runs += 1
        if runs == 1:
            await release.wait()
        return True

    task = asyncio.create_task(rounds.on_change(changed, "held", held_first, retry=0.01))
    try:
        await asyncio.sleep(0.05)
        for _ in range(3):  # three changes while the first round runs
            changed.set()
            await asyncio.sleep(0)
        release.set()
        await asyncio.sleep(0.1)
        assert runs == 2
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


@pytest.mark.parametrize(
    "answer",
    [False, errors.service_unavailable("storage is away"), RuntimeError("a bug")],
    ids=["work-left", "status-error", "bug"],
)
async def test_a_round_that_left_work_or_failed_runs_again_after_the_retry(
    controller: Callable[..., tuple[asyncio.Event, Rounds]], answer: bool | Exception
) -> None:
    _, round_ = controller(retry=0.05)
    round_.answers = [answer]
    assert await round_.next_run() == 1
    assert await round_.next_run() == 2  # no change: the retry
    assert await quiet_for(0.2, round_)  # settled


async def test_nothing_changing_still_brings_a_resync(
    controller: Callable[..., tuple[asyncio.Event, Rounds]],
) -> None:
    _, round_ = controller(resync=0.05)
    assert await round_.next_run() == 1
    assert await round_.next_run() == 2
    assert await round_.next_run() == 3
