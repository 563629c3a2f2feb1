"""EventWindow: the recent events of one resource, from which a watch at a
resourceVersion is replayed, sized the way kube's watch cache sizes itself.

The capacity starts at the lower bound and doubles (up to the upper bound)
whenever the window is full of events younger than the fresh duration, so
75s of history survive bursts; it halves (down to the lower bound) when even
the newest quarter of a full window is older than that, so an idle resource
gives its memory back. A watch from a revision older than the window gets 410
Expired with kube's message, "too old resource version: N (OLDEST)", where
OLDEST is the oldest revision a watch may start from: the list's revision
while no event has left, else the revision just before the oldest event held
(kube's getAllEventsSinceLocked).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from strata.storage import Expired

LOWER_BOUND = 100
UPPER_BOUND = 100 * 1024
FRESH_SECONDS = 75.0

E = TypeVar("E")


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
        lower: int = LOWER_BOUND,
        upper: int = UPPER_BOUND,
        fresh_seconds: float = FRESH_SECONDS,
        on_resize: Callable[[int], None] = lambda _: None,
    ) -> None:
        if not 0 < lower <= upper:
            raise ValueError(f"window bounds must satisfy 0 < lower <= upper: {lower}, {upper}")
        self._clock = clock
        self._lower, self._upper, self._fresh = lower, upper, fresh_seconds
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
        """Start over after a (re)list at list_revision: nothing to replay yet."""
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
        if len(self) < self.capacity:
            return
        if now - self._at(self._start).recorded < self._fresh:
            wanted = min(self.capacity * 2, self._upper)
        elif now - self._at(self._end - self.capacity // 4).recorded > self._fresh:
            wanted = max(self.capacity // 2, self._lower)
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
