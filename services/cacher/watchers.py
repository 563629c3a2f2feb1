"""What the watch cache keeps per event and per watcher.

A Change is one event of the window with its encodings made at most once: the
event as received, and the two rewrites kube's watch filtering needs (ADDED for
an object that starts matching a watcher's selector, DELETED for one that stops
matching). Every watcher that sees the change the same way gets the same bytes.

A Watcher is one client's watch and its next bookmark time. Its events go
either to a Sink (a watch stream's outbox, which says when its reader has
fallen too far behind) or to a bounded buffer of its own, read one by one, with
a short time budget when the buffer overflows. Either way a watcher that cannot
keep up is closed, never waited for.

A WatcherGroup is the watchers of one key or prefix. It sends an event to the
watchers without selectors that share a watch stream in one put: a gateway's
thousand watchers of a namespace cost the dispatch one call, not a thousand.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from typing import NamedTuple

import orjson

from strata.proto.storage.v1 import storage_pb2
from strata.storage.requests import Matcher, seen_as
from strata.storage.watch_stream import Outbox, Sink, WatchSink

Event = storage_pb2.WatchEvent
Object = storage_pb2.Object

# Encoded events a watcher may have waiting before its time budget starts.
DEFAULT_BUFFER = 1024
# How long a watcher may stay over its buffer before it is closed.
DEFAULT_BUDGET_SECONDS = 0.5
# A watcher over twice its buffer is closed at once, whatever its budget.
HARD_LIMIT_FACTOR = 2


def encode(event: Event) -> bytes:
    return event.SerializeToString()


def stamped_at(obj: Object, revision: int) -> Object:
    """obj as it stood at revision (the old state a DELETED-by-selector event carries)."""
    if obj.resource_version == revision:
        return obj
    body = orjson.loads(obj.value)
    body.setdefault("metadata", {})["resourceVersion"] = str(revision)
    stamped = Object()
    stamped.CopyFrom(obj)
    stamped.value = orjson.dumps(body)
    stamped.resource_version = revision
    return stamped


class Change:
    """One event in the window, and the state of its key before it."""

    __slots__ = ("_added", "_removed", "_wire", "event", "previous")

    def __init__(self, event: Event, previous: Object | None) -> None:
        self.event, self.previous = event, previous
        self._wire: bytes | None = None
        self._added: bytes | None = None
        self._removed: bytes | None = None

    @property
    def key(self) -> str:
        return self.event.object.key

    def wire(self) -> bytes:
        if self._wire is None:
            self._wire = encode(self.event)
        return self._wire

    def _as_added(self) -> bytes:
        if self._added is None:
            event = self.event
            self._added = encode(
                Event(
                    type=Event.ADDED, object=event.object, resource_version=event.resource_version
                )
            )
        return self._added

    def _as_removed(self) -> bytes:
        if self._removed is None:
            assert self.previous is not None
            at = self.event.resource_version
            self._removed = encode(
                Event(
                    type=Event.DELETED,
                    object=stamped_at(self.previous, at),
                    resource_version=at,
                )
            )
        return self._removed

    def seen_through(self, matches: Matcher) -> bytes | None:
        """The encoded event a watcher with this selector gets, or None (kube's
        filtering, strata.storage's seen_as)."""
        if matches.everything:
            return self.wire()
        event = self.event
        deleted = event.type == Event.DELETED
        seen = seen_as(
            matches,
            event.type,
            None if deleted else event.object,
            lambda: event.object if deleted else self.previous,
        )
        if seen is None:
            return None
        if seen == event.type:
            return self.wire()
        return self._as_added() if seen == Event.ADDED else self._as_removed()


class Watcher:
    def __init__(
        self,
        *,
        key: str,
        recursive: bool,
        matches: Matcher,
        bookmarks: bool,
        deadline: float | None = None,
        buffer: int = DEFAULT_BUFFER,
        budget_seconds: float = DEFAULT_BUDGET_SECONDS,
        on_terminated: Callable[[], None] = lambda: None,
        sink: Sink | None = None,
    ) -> None:
        """With a sink, events go there; otherwise to the buffer next() reads."""
        self.key, self.recursive, self.matches = key, recursive, matches
        # Whether every event of its key reaches it as it is (no selectors):
        # most watchers, and the dispatch's fast path.
        self.everything = matches.everything
        self.sink = sink
        self.bookmarks = bookmarks
        # When the client will end the watch (clock time), if it said.
        self.deadline = deadline
        self.next_bookmark: float | None = None
        self._items: deque[bytes] = deque()
        self._buffer, self._budget = buffer, budget_seconds
        self._on_terminated = on_terminated
        self._waiter: asyncio.Future[None] | None = None
        self._stall: asyncio.TimerHandle | None = None
        self._closed = asyncio.get_running_loop().create_future()
        self.closed = False
        self.terminated = False

    def wants(self, key: str) -> bool:
        return key.startswith(self.key) if self.recursive else key == self.key

    def send(self, data: bytes) -> None:
        """Queue data; a watcher that stays behind is closed, never waited for."""
        if self.closed:
            return
        if self.sink is not None:
            if not self.sink.send(data):
                self.terminate()
            return
        self._items.append(data)
        waiting = len(self._items)
        if waiting > self._buffer:
            if waiting > self._buffer * HARD_LIMIT_FACTOR:
                self.terminate()
                return
            if self._stall is None:
                self._stall = asyncio.get_running_loop().call_later(self._budget, self._judge)
        self._wake()

    def _judge(self) -> None:
        self._stall = None
        if len(self._items) > self._buffer:
            self.terminate()

    def terminate(self) -> None:
        """Close a watcher that cannot keep up; it resumes from its last event."""
        if not self.closed:
            self.terminated = True
            self._on_terminated()
            self.close()

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self._closed.set_result(None)
        self._items.clear()
        if self._stall is not None:
            self._stall.cancel()
            self._stall = None
        self._wake()

    async def wait_closed(self) -> None:
        await asyncio.shield(self._closed)

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def next(self) -> bytes | None:
        """The next encoded event, or None once closed."""
        while not self._items:
            if self.closed:
                return None
            self._waiter = asyncio.get_running_loop().create_future()
            await self._waiter
            self._waiter = None
        data = self._items.popleft()
        if self._stall is not None and len(self._items) <= self._buffer:
            self._stall.cancel()
            self._stall = None
        return data

    def schedule_bookmark(self, now: float, frequency: float) -> None:
        """Next bookmark about frequency from now, and never later than 2s before the
        watch's deadline (so an informer can resume from it); none past that."""
        if not self.bookmarks:
            return
        due = now + frequency
        if self.deadline is not None:
            due = min(due, self.deadline - 2.0)
        self.next_bookmark = due if due > now else None


class _Batch(NamedTuple):
    """Watchers without selectors on one watch stream: sent to in one put."""

    outbox: Outbox
    ids: tuple[int, ...]
    watchers: list[Watcher]


class WatcherGroup:
    """The watchers of one key or prefix, and how an event reaches them."""

    __slots__ = ("_plan", "watchers")

    def __init__(self) -> None:
        self.watchers: set[Watcher] = set()
        # Batches and the watchers sent to one by one; made again after a change.
        self._plan: tuple[list[_Batch], list[Watcher]] | None = None

    def add(self, watcher: Watcher) -> None:
        self.watchers.add(watcher)
        self._plan = None

    def discard(self, watcher: Watcher) -> bool:
        """Whether watcher was in the group (it is not now)."""
        if watcher not in self.watchers:
            return False
        self.watchers.discard(watcher)
        self._plan = None
        return True

    def _planned(self) -> tuple[list[_Batch], list[Watcher]]:
        if self._plan is None:
            streams: dict[int, tuple[Outbox, list[int], list[Watcher]]] = {}
            singles: list[Watcher] = []
            for watcher in self.watchers:
                sink = watcher.sink
                if watcher.everything and isinstance(sink, WatchSink):
                    _, ids, watchers = streams.setdefault(id(sink.outbox), (sink.outbox, [], []))
                    ids.append(sink.id)
                    watchers.append(watcher)
                else:
                    singles.append(watcher)
            batches = [_Batch(o, tuple(ids), ws) for o, ids, ws in streams.values()]
            self._plan = (batches, singles)
        return self._plan

    def send(self, change: Change) -> tuple[int, list[Watcher]]:
        """change to every watcher that wants it: how many got it, and the
        watchers closed because their stream is too far behind."""
        batches, singles = self._planned()
        wire = change.wire()
        sent = 0
        behind: list[Watcher] = []
        for batch in batches:
            sent += len(batch.ids)
            if not batch.outbox.put_live_many(batch.ids, wire):
                for watcher in batch.watchers:
                    watcher.terminate()
                behind += batch.watchers
        for watcher in singles:
            data = wire if watcher.everything else change.seen_through(watcher.matches)
            if data is not None:
                watcher.send(data)
                sent += 1
        return sent, behind
