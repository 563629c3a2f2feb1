"""WatchCache: one resource's current objects and a window of recent events,
kept by a reflector (list, then watch from the list's revision) and fanned out
to every watcher of the resource.

A watcher gets a bounded queue; one that falls behind is closed instead of
slowing the reflector or the other watchers, and resumes from its last
resourceVersion (or gets 410 if that left the window). Each watcher sees the
events through its own predicate, with kube's rules for objects that start or
stop matching.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections import deque
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field

import orjson

from strata import telemetry
from strata.proto.storage.v1 import storage_pb2
from strata.storage import (
    Expired,
    KeyNotFound,
    ListOptions,
    ListResult,
    Storage,
    StorageError,
    TooLargeResourceVersion,
    Unavailable,
    WatchOptions,
)
from strata.storage._requests import Matcher, through

Event = storage_pb2.WatchEvent
Object = storage_pb2.Object
DEFAULT_CAPACITY = 1024
WATCHER_QUEUE = 1024
SYNC_TIMEOUT_SECONDS = 10.0
FUTURE_RV_WAIT_SECONDS = 3.0

log = telemetry.get_logger("strata.cacher")


def _at(obj: Object, revision: int) -> Object:
    """obj as it stood at revision (the old state a DELETED-by-predicate event carries)."""
    if obj.resource_version == revision:
        return obj
    body = orjson.loads(obj.value)
    body.setdefault("metadata", {})["resourceVersion"] = str(revision)
    stamped = Object()
    stamped.CopyFrom(obj)
    stamped.value = orjson.dumps(body)
    stamped.resource_version = revision
    return stamped


@dataclass(frozen=True)
class _Change:
    """One event in the window: what happened, and the state before it."""

    event: Event
    previous: Object | None


@dataclass(eq=False)
class _Watcher:
    key: str
    recursive: bool
    matches: Matcher
    progress: bool
    queue: asyncio.Queue[Event | None] = field(
        default_factory=lambda: asyncio.Queue(maxsize=WATCHER_QUEUE)
    )
    closed: bool = False

    def wants(self, key: str) -> bool:
        return key.startswith(self.key) if self.recursive else key == self.key

    def view(self, change: _Change) -> Event | None:
        event = change.event
        if not self.wants(event.object.key):
            return None
        at = event.resource_version
        if event.type == Event.DELETED:
            return through(self.matches, Event.DELETED, None, lambda: event.object, at)
        previous = change.previous
        return through(
            self.matches,
            event.type,
            event.object,
            lambda: None if previous is None else _at(previous, at),
            at,
        )

    def send(self, event: Event) -> bool:
        """Queue event; False (and closed) when the watcher cannot keep up."""
        try:
            self.queue.put_nowait(event)
            return True
        except asyncio.QueueFull:
            self.close()
            return False

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            # Make room for the end marker so the reader wakes up.
            while self.queue.full():
                self.queue.get_nowait()
            self.queue.put_nowait(None)


class WatchCache:
    def __init__(self, upstream: Storage, root: str, capacity: int = DEFAULT_CAPACITY) -> None:
        self._upstream = upstream
        self.root = root
        self._objects: dict[str, Object] = {}
        self._changes: deque[_Change] = deque()
        self._capacity = capacity
        self.revision = 0
        self._oldest = 0  # watches from this revision on can be replayed
        self._evicted = False  # whether the window has dropped an event since the last list
        self._watchers: set[_Watcher] = set()
        self._synced = asyncio.Event()
        self._progress = asyncio.Condition()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._task is None:
            # The reflector outlives the request that created the cache: it must not
            # carry that request's trace context (its watch would join that trace).
            self._task = asyncio.create_task(
                self._reflect(), name=f"reflector {self.root}", context=contextvars.Context()
            )

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        for watcher in list(self._watchers):
            watcher.close()

    async def wait_synced(self) -> None:
        try:
            await asyncio.wait_for(self._synced.wait(), SYNC_TIMEOUT_SECONDS)
        except TimeoutError:
            raise Unavailable(self.root, f"watch cache for {self.root} is not ready") from None

    # --- the reflector -----------------------------------------------------------

    async def _reflect(self) -> None:
        backoff = 0.1
        need_list = True
        while True:
            try:
                if need_list:
                    self._replace(await self._upstream.list(self.root, ListOptions()))
                    need_list = False
                watch = self._upstream.watch(
                    self.root,
                    WatchOptions(resource_version=str(self.revision), progress_notify=True),
                )
                async for event in watch:
                    await self._apply(event)
                    backoff = 0.1
            except Expired:
                log.info("watch expired; relisting", root=self.root, revision=self.revision)
                need_list = True
            except StorageError as e:
                log.warning("reflector error", root=self.root, error=str(e))
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, 5.0)

    def _replace(self, result: ListResult) -> None:
        # A relist starts a new window: watchers resume and get 410 if they must.
        for watcher in list(self._watchers):
            watcher.close()
        self._watchers.clear()
        self._objects = {obj.key: obj for obj in result.items}
        self._changes.clear()
        self.revision = self._oldest = result.resource_version
        self._evicted = False
        self._synced.set()

    async def _apply(self, event: Event) -> None:
        if event.type == Event.BOOKMARK:
            # Upstream reached this revision with nothing new for this resource.
            self.revision = max(self.revision, event.resource_version)
            for watcher in list(self._watchers):
                if watcher.progress and not watcher.send(event):
                    self._watchers.discard(watcher)
        else:
            obj = event.object
            previous = self._objects.get(obj.key)
            if event.type == Event.DELETED:
                self._objects.pop(obj.key, None)
            else:
                self._objects[obj.key] = obj
            change = _Change(event, previous)
            if len(self._changes) >= self._capacity:
                self._oldest = self._changes.popleft().event.resource_version
                self._evicted = True
            self._changes.append(change)
            self.revision = event.resource_version
            for watcher in list(self._watchers):
                seen = watcher.view(change)
                if seen is not None and not watcher.send(seen):
                    self._watchers.discard(watcher)
        async with self._progress:
            self._progress.notify_all()

    def predates_window(self, since: int) -> bool:
        """True when a watch from since starts before anything this cache ever held.

        Such a watch is older than the cache, not than its window: storage may still
        have that history, so it is better asked than answered with 410.
        """
        return 0 < since < self._oldest and not self._evicted

    # --- reads -------------------------------------------------------------------

    def get(self, key: str) -> Object:
        obj = self._objects.get(key)
        if obj is None:
            raise KeyNotFound(key)
        return obj

    def list(self, prefix: str, matches: Matcher) -> ListResult:
        items = [
            obj
            for key, obj in sorted(self._objects.items())
            if key.startswith(prefix) and matches(obj)
        ]
        return ListResult(items=items, resource_version=self.revision)

    async def wait_for_revision(self, revision: int) -> None:
        """Return once the cache has reached revision; TooLargeResourceVersion after a while."""

        async def reached() -> None:
            async with self._progress:
                await self._progress.wait_for(lambda: self.revision >= revision)

        try:
            await asyncio.wait_for(reached(), FUTURE_RV_WAIT_SECONDS)
        except TimeoutError:
            raise TooLargeResourceVersion(
                self.root, f"Too large resource version: {revision}, current: {self.revision}"
            ) from None

    async def watch(
        self, key: str, since: int, recursive: bool, matches: Matcher, progress: bool = False
    ) -> AsyncGenerator[Event, None]:
        await self.wait_synced()
        if since > self.revision:
            await self.wait_for_revision(since)
        watcher = _Watcher(key=key, recursive=recursive, matches=matches, progress=progress)
        # From here to registering the watcher nothing awaits, so no event is
        # missed or seen twice between the replay and the live stream.
        initial: list[Event]
        if since == 0:
            initial = [
                Event(type=Event.ADDED, object=obj, resource_version=obj.resource_version)
                for k, obj in sorted(self._objects.items())
                if watcher.wants(k) and matches(obj)
            ]
        elif since < self._oldest:
            raise Expired(key, f"too old resource version: {since} ({self._oldest})")
        else:
            initial = [
                seen
                for change in self._changes
                if change.event.resource_version > since
                and (seen := watcher.view(change)) is not None
            ]
        self._watchers.add(watcher)
        try:
            for event in initial:
                yield event
            while (live := await watcher.queue.get()) is not None:
                yield live
        finally:
            watcher.close()
            self._watchers.discard(watcher)
