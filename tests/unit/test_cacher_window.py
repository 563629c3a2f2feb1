"""The watch cache's event window: replay from a revision, 410 for revisions it
no longer covers, and kube's capacity rules (grow while events are fresh,
shrink when even the newest quarter is stale)."""

from __future__ import annotations

import pytest

from services.cacher.window import EventWindow
from strata.storage import Expired


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def filled(window: EventWindow[int], clock: Clock, revisions: range, step: float) -> None:
    for revision in revisions:
        window.append(revision, revision)
        clock.now += step


def test_replays_every_event_after_a_revision_in_order() -> None:
    clock = Clock()
    window: EventWindow[int] = EventWindow(clock, lower=4, upper=4)
    window.reset(10)
    filled(window, clock, range(11, 14), 1)
    assert window.since(10, "/k") == [11, 12, 13]
    assert window.since(12, "/k") == [13]
    assert window.since(13, "/k") == []


def test_a_revision_before_the_window_is_too_old() -> None:
    clock = Clock()
    window: EventWindow[int] = EventWindow(clock, lower=4, upper=4, fresh_seconds=1)
    window.reset(10)
    filled(window, clock, range(11, 21), 10)
    assert window.since(16, "/k") == [17, 18, 19, 20]
    with pytest.raises(Expired) as caught:
        window.since(15, "/k")
    assert str(caught.value).endswith("too old resource version: 15 (16)")


def test_before_anything_was_evicted_the_list_revision_is_the_oldest() -> None:
    clock = Clock()
    window: EventWindow[int] = EventWindow(clock, lower=4, upper=4)
    window.reset(10)
    filled(window, clock, range(11, 13), 1)
    assert window.since(10, "/k") == [11, 12]
    assert window.oldest() == 10
    with pytest.raises(Expired) as caught:
        window.since(9, "/k")
    assert str(caught.value).endswith("too old resource version: 9 (10)")


def test_a_relist_starts_the_window_over_at_the_list_revision() -> None:
    clock = Clock()
    window: EventWindow[int] = EventWindow(clock, lower=4, upper=4)
    window.reset(10)
    filled(window, clock, range(11, 13), 1)
    window.reset(20)
    assert window.oldest() == 20 and len(window) == 0
    assert window.since(20, "/k") == []
    with pytest.raises(Expired) as caught:
        window.since(12, "/k")
    assert str(caught.value).endswith("too old resource version: 12 (20)")


def test_grows_while_the_window_holds_only_fresh_events() -> None:
    clock = Clock()
    sizes: list[int] = []
    window: EventWindow[int] = EventWindow(clock, lower=4, upper=16, on_resize=sizes.append)
    window.reset(0)
    filled(window, clock, range(1, 21), 0.1)
    assert window.capacity == 16 and sizes == [4, 8, 16]
    # At the upper bound it evicts instead.
    assert window.since(4, "/k") == list(range(5, 21))
    with pytest.raises(Expired):
        window.since(3, "/k")


def test_shrinks_when_the_newest_quarter_is_stale() -> None:
    clock = Clock()
    window: EventWindow[int] = EventWindow(clock, lower=4, upper=16, fresh_seconds=75)
    window.reset(0)
    filled(window, clock, range(1, 17), 1)
    assert window.capacity == 16
    clock.now += 100  # idle for longer than the fresh duration
    window.append(17, 17)
    assert window.capacity == 8
    assert window.since(9, "/k") == list(range(10, 18))


def test_does_not_shrink_below_the_lower_bound() -> None:
    clock = Clock()
    window: EventWindow[int] = EventWindow(clock, lower=4, upper=4, fresh_seconds=1)
    window.reset(0)
    filled(window, clock, range(1, 30), 100)
    assert window.capacity == 4


def test_bounds_are_checked() -> None:
    with pytest.raises(ValueError):
        EventWindow(Clock(), lower=8, upper=4)
