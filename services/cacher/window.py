"""EventWindow: the recent events of one resource, from which a watch at a
resourceVersion is replayed, sized by kube v1.36's watch cache rules (its
watchCacheHistory).

Each event is recorded with the time it arrived. Only an arriving event
resizes the window, and only a full one:
- it doubles (up to the upper bound) when even its oldest event is younger
  than the fresh duration, so a burst keeps at least that much history;
- it halves (down to the lower bound, 100) when the event a quarter of the
  capacity back from the newest is older than the fresh duration, so an idle
  resource gives its memory back; a window at the lower bound stays.
Then, if still full, the oldest event leaves to make room.

The fresh duration is kube's EventsHistoryWindow: 75s, or the request timeout
plus 15s when that is longer (kube-apiserver derives it from --request-timeout
so that a list taking up to the request timeout can still be followed by a
watch from its revision), never below 75s. The upper bound is 102400 events
for 75s, scaled to a longer fresh duration by the next power of two of the
ratio (kube's capacityUpperBound).

A watch from a revision older than the window gets 410 Expired with kube's
message, "too old resource version: N (OLDEST)", where OLDEST is the oldest
revision a watch may start from: the list's revision while no event has left,
else the revision just before the oldest event held (kube's GetIntervalLocked).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from strata.storage import Expired

LOWER_BOUND = 100
# kube's defaultUpperBoundCapacity: the upper bound for the default fresh duration.
UPPER_BOUND = 100 * 1024
# kube's DefaultEventFreshDuration (the bookmark frequency, 1m, plus 15s): the
# shortest fresh duration kube's cacher accepts.
FRESH_SECONDS = 75.0
# kube-apiserver's default --request-timeout.
REQUEST_TIMEOUT_SECONDS = 60.0
# The upper bound stays a 32-bit integer, as kube's does: 102400 << 14.
_MAX_EXPONENT = math.floor(math.log2((2**31 - 1) // UPPER_BOUND))

E = TypeVar("E")


def fresh_seconds(request_timeout_seconds: float = REQUEST_TIMEOUT_SECONDS) -> float:
    """kube-apiserver's EventsHistoryWindow for a --request-timeout: the longer of
    75s and the request timeout plus 15s (75s when the timeout is 0)."""
    if request_timeout_seconds <= 0:
        return FRESH_SECONDS
    return max(FRESH_SECONDS, request_timeout_seconds + 15)


def upper_bound(fresh: float) -> int:
    """kube's capacityUpperBound: 102400 for up to 75s of history, doubled for each
    power of two the fresh duration's ratio to 75s is rounded up to."""
    if fresh <= FRESH_SECONDS:
        return UPPER_BOUND
    exponent = math.ceil(math.log2(fresh / FRESH_SECONDS))
    return UPPER_BOUND << min(exponent, _MAX_EXPONENT)


@dataclass(frozen=True, slots=True)
class Entry(Generic[E]):
    revision: int
    recorded: float
    item: E


class EventWindow(Generic[E]):
    def __init__(
        self,
        clock: Callable[[], float],
        *,
        fresh: float = FRESH_SECONDS,
        lower: int = LOWER_BOUND,
        upper: int | None = None,
        on_resize: Callable[[int], None] = lambda _: None,
    ) -> None:
        """fresh: the fresh duration in seconds (kube refuses one below 75s);
        upper: the upper bound, upper_bound(fresh) unless given (lower and upper
        are kube's fixed bounds, given here only by tests)."""
        if fresh < FRESH_SECONDS:
            raise ValueError(f"events history window ({fresh:g}s) must not be below 75s")
        upper = upper_bound(fresh) if upper is None else upper
        if not 0 < lower <= upper:
            raise ValueError(f"window bounds must satisfy 0 < lower <= upper: {lower}, {upper}")
        self._clock = clock
        self.fresh, self.lower, self.upper = fresh, lower, upper
        self._on_resize = on_resize
        self.capacity = lower
        # A ring: entries live at [start % capacity, end % capacity).
        self._ring: list[Entry[E] | None] = [None] * lower
        self._start = self._end = 0
        self._list_revision = 0
        self._evicted = False  # whether an event left since the last reset
        on_resize(lower)

    def __len__(self) -> int:
        return self._end - self._start

    def _at(self, index: int) -> Entry[E]:
        entry = self._ring[index % self.capacity]
        assert entry is not None
        return entry

    def reset(self, list_revision: int) -> None:
        """Start over after a (re)list at list_revision: nothing to replay yet. The
        capacity stays what it was, as kube's does."""
        self._ring = [None] * self.capacity
        self._start = self._end
        self._list_revision = list_revision
        self._evicted = False

    def append(self, revision: int, item: E) -> None:
        now = self._clock()
        self._resize(now)
        if len(self) == self.capacity:
            self._ring[self._start % self.capacity] = None
            self._start += 1
            self._evicted = True
        self._ring[self._end % self.capacity] = Entry(revision, now, item)
        self._end += 1

    def _resize(self, now: float) -> None:
        """kube's resizeCacheLocked, at an event arriving at now."""
        if len(self) < self.capacity:
            return
        if now - self._at(self._start).recorded < self.fresh:
            wanted = min(self.capacity * 2, self.upper)
        elif now - self._at(self._end - self.capacity // 4).recorded > self.fresh:
            wanted = max(self.capacity // 2, self.lower)
        else:
            return
        if wanted == self.capacity:
            return
        if wanted < self.capacity:
            for index in range(self._start, self._end - wanted):
                self._ring[index % self.capacity] = None
            self._start = self._end - wanted
            self._evicted = True
        ring: list[Entry[E] | None] = [None] * wanted
        for index in range(self._start, self._end):
            ring[index % wanted] = self._at(index)
        self._ring, self.capacity = ring, wanted
        self._on_resize(wanted)

    def oldest(self) -> int:
        """The oldest revision a watch may start from (it gets every event after it)."""
        if self._list_revision and not self._evicted:
            return self._list_revision
        if len(self):
            return self._at(self._start).revision - 1
        return self._list_revision

    def since(self, revision: int, key: str) -> list[E]:
        """Every event after revision, oldest first; Expired if some have left."""
        oldest = self.oldest()
        if revision < oldest:
            raise Expired(key, f"too old resource version: {revision} ({oldest})")
        low, high = self._start, self._end
        while low < high:
            middle = (low + high) // 2
            if self._at(middle).revision > revision:
                high = middle
            else:
                low = middle + 1
        return [self._at(index).item for index in range(low, self._end)]
