"""The watch cache's event window: replay from a revision, 410 for revisions it
no longer covers, and kube v1.36's sizing rules (watchCacheHistory), each
stated with a fake clock:

- it starts at 100 events; only an arriving event resizes it, and only when
  the window is full;
- it doubles (up to its upper bound) when its oldest event is younger than the
  fresh duration, and halves (down to 100) when the event capacity/4 back from
  the newest is older than it; both comparisons are strict;
- the fresh duration is max(75s, request timeout + 15s), never below 75s; the
  upper bound is 102400 for 75s and 102400 << ceil(log2(fresh / 75s)) above.

kube's answers (podtemplates, 200 created in 2s, then one more after an idle
time; `with_kube.sh`, default --request-timeout and --request-timeout=2m):
capacity 100 after 100 events, 200 after the 101st; after 80s idle with 60s
the window shrank to 100 ("too old resource version: 308 (309)" for the 100th
event's revision 308, a replay of 100 events from 309); with 2m it grew and
still replayed all 200 from the first event's revision.
"""

from __future__ import annotations

import pytest

from services.cacher.window import EventWindow, fresh_seconds, upper_bound
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


def too_old(window: EventWindow[int], revision: int) -> str:
    with pytest.raises(Expired) as caught:
        window.since(revision, "/k")
    message = str(caught.value)
    return message[message.index("too old") :]


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
    window: EventWindow[int] = EventWindow(clock, lower=4, upper=4)
    window.reset(10)
    filled(window, clock, range(11, 21), 10)
    assert window.since(16, "/k") == [17, 18, 19, 20]
    assert too_old(window, 15) == "too old resource version: 15 (16)"


def test_before_anything_was_evicted_the_list_revision_is_the_oldest() -> None:
    clock = Clock()
    window: EventWindow[int] = EventWindow(clock, lower=4, upper=4)
    window.reset(10)
    filled(window, clock, range(11, 13), 1)
    assert window.since(10, "/k") == [11, 12]
    assert window.oldest() == 10
    assert too_old(window, 9) == "too old resource version: 9 (10)"


def test_a_relist_starts_the_window_over_and_keeps_its_capacity() -> None:
    clock = Clock()
    window: EventWindow[int] = EventWindow(clock, lower=4, upper=16)
    window.reset(10)
    filled(window, clock, range(11, 16), 1)
    assert window.capacity == 8
    window.reset(20)
    assert window.oldest() == 20 and len(window) == 0 and window.capacity == 8
    assert window.since(20, "/k") == []
    assert too_old(window, 12) == "too old resource version: 12 (20)"


def test_kubes_defaults_start_at_100_and_grow_to_102400() -> None:
    sizes: list[int] = []
    window: EventWindow[int] = EventWindow(Clock(), on_resize=sizes.append)
    assert (window.capacity, window.lower, window.upper, window.fresh) == (100, 100, 102400, 75)
    assert sizes == [100]


def test_grows_when_full_and_the_oldest_event_is_younger_than_the_fresh_duration() -> None:
    clock = Clock()
    sizes: list[int] = []
    window: EventWindow[int] = EventWindow(clock, lower=4, upper=16, on_resize=sizes.append)
    window.reset(0)
    filled(window, clock, range(1, 5), 1)
    assert window.capacity == 4  # full, but only an arriving event resizes
    filled(window, clock, range(5, 21), 1)
    assert sizes == [4, 8, 16]
    # At the upper bound it evicts instead.
    assert window.since(4, "/k") == list(range(5, 21))
    assert too_old(window, 3) == "too old resource version: 3 (4)"


def test_does_not_grow_when_the_oldest_event_is_exactly_the_fresh_duration_old() -> None:
    clock = Clock()
    window: EventWindow[int] = EventWindow(clock, lower=4, upper=16)
    window.reset(0)
    window.append(1, 1)
    clock.now += 75
    filled(window, clock, range(2, 5), 0)
    window.append(5, 5)  # the oldest is 75s old: not younger, no growth
    assert window.capacity == 4 and window.since(1, "/k") == [2, 3, 4, 5]
    assert too_old(window, 0) == "too old resource version: 0 (1)"


def test_a_window_that_is_not_full_never_resizes() -> None:
    clock = Clock()
    window: EventWindow[int] = EventWindow(clock, lower=4, upper=16)
    window.reset(0)
    filled(window, clock, range(1, 6), 0)  # grew to 8 at the fifth
    clock.now += 1000
    filled(window, clock, range(6, 9), 1000)
    assert window.capacity == 8 and window.since(0, "/k") == list(range(1, 9))


def test_shrinks_when_the_event_a_quarter_back_is_older_than_the_fresh_duration() -> None:
    clock = Clock()
    window: EventWindow[int] = EventWindow(clock, lower=4, upper=16)
    window.reset(0)
    filled(window, clock, range(1, 17), 1)
    assert window.capacity == 16
    clock.now += 100  # idle for longer than the fresh duration
    window.append(17, 17)
    # Halved to the newest 8, then the oldest of those left for the new event.
    assert window.capacity == 8
    assert window.since(9, "/k") == list(range(10, 18))
    assert too_old(window, 8) == "too old resource version: 8 (9)"


def test_a_stale_oldest_event_with_a_fresh_newest_quarter_only_evicts() -> None:
    clock = Clock()
    window: EventWindow[int] = EventWindow(clock, lower=4, upper=8)
    window.reset(0)
    filled(window, clock, range(1, 6), 0)  # capacity 8 now
    clock.now += 100
    filled(window, clock, range(6, 9), 0)  # full: 1..5 stale, 6..8 fresh
    window.append(9, 9)  # index end-2 (event 7) is fresh: neither rule applies
    assert window.capacity == 8 and window.since(1, "/k") == list(range(2, 10))


def test_does_not_shrink_when_the_quarter_event_is_exactly_the_fresh_duration_old() -> None:
    clock = Clock()
    window: EventWindow[int] = EventWindow(clock, lower=4, upper=8)
    window.reset(0)
    filled(window, clock, range(1, 9), 0)
    clock.now += 75
    window.append(9, 9)
    assert window.capacity == 8


def test_does_not_shrink_below_the_lower_bound() -> None:
    # kube's window of a resource written 100 times, then idle: still 100 events.
    clock = Clock()
    window: EventWindow[int] = EventWindow(clock)
    window.reset(0)
    filled(window, clock, range(1, 101), 0.01)
    clock.now += 80
    window.append(101, 101)
    assert window.capacity == 100
    assert window.since(1, "/k") == list(range(2, 102))


def kubes_experiment(request_timeout: float) -> tuple[EventWindow[int], list[int]]:
    """What was asked of kube: 200 events in 2s after a list at 208, 80s idle
    since the last, one more event."""
    clock = Clock()
    window: EventWindow[int] = EventWindow(clock, fresh=fresh_seconds(request_timeout))
    window.reset(208)
    revisions = list(range(209, 409))
    filled(window, clock, range(209, 409), 0.01)
    assert window.capacity == 200
    clock.now += 80
    window.append(409, 409)
    return window, revisions


def test_kubes_idle_window_with_the_default_request_timeout_shrinks() -> None:
    window, revisions = kubes_experiment(60)
    assert window.capacity == 100
    assert too_old(window, revisions[99]) == "too old resource version: 308 (309)"
    assert len(window.since(revisions[100], "/k")) == 100


def test_kubes_idle_window_with_a_two_minute_request_timeout_grows() -> None:
    window, revisions = kubes_experiment(120)
    assert window.capacity == 400
    assert len(window.since(revisions[0], "/k")) == 200
    assert window.since(208, "/k")[0] == 209


def test_the_fresh_duration_follows_the_request_timeout() -> None:
    assert fresh_seconds() == 75  # kube-apiserver's default 1m request timeout
    assert fresh_seconds(60) == 75
    assert fresh_seconds(30) == 75
    assert fresh_seconds(0) == 75
    assert fresh_seconds(61) == 76
    assert fresh_seconds(120) == 135


def test_the_upper_bound_follows_the_fresh_duration() -> None:
    assert upper_bound(75) == 102400
    assert upper_bound(76) == 204800
    assert upper_bound(135) == 204800
    assert upper_bound(150) == 204800
    assert upper_bound(151) == 409600
    assert upper_bound(75 * 2**20) == 102400 << 14  # kept a 32-bit integer
    assert EventWindow(Clock(), fresh=135).upper == 204800


def test_a_fresh_duration_below_75s_and_bad_bounds_are_refused() -> None:
    with pytest.raises(ValueError, match=r"events history window \(74s\) must not be below 75s"):
        EventWindow(Clock(), fresh=74)
    with pytest.raises(ValueError):
        EventWindow(Clock(), lower=8, upper=4)
