"""WatchCache: one resource's current objects and a window of recent events,
kept by a reflector (list, then watch from the list's revision) and fanned out
to every watcher of the resource.

A watcher gets a bounded queue; one that falls behind is closed instead of
slowing the reflector or the other watchers, and resumes from its last
resourceVersion (or gets 410 if that left the window).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field

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

Event = storage_pb2.WatchEvent
DEFAULT_CAPACITY = 1024
WATCHER_QUEUE = 1024
SYNC_TIMEOUT_SECONDS = 10.0
FUTURE_RV_WAIT_SECONDS = 3.0

log = telemetry.get_logger("strata.cacher")


@dataclass(eq=False)
class _Watcher:
    key: str
    recursive: bool
    queue: asyncio.Queue[Event | None] = field(
        default_factory=lambda: asyncio.Queue(maxsize=WATCHER_QUEUE)
    )
    closed: bool = False

    def wants(self, key: str) -> bool:
        return key.startswith(self.key) if self.recursive else key == self.key

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
        self._objects: dict[str, storage_pb2.Object] = {}
        self._events: deque[Event] = deque()
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
            self._task = asyncio.create_task(self._reflect(), name=f"reflector {self.root}")

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
                    self.root, WatchOptions(resource_version=str(self.revision))
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
        self._events.clear()
        self.revision = self._oldest = result.resource_version
        self._evicted = False
        self._synced.set()

    async def _apply(self, event: Event) -> None:
        obj = event.object
        if event.type == Event.DELETED:
            self._objects.pop(obj.key, None)
        else:
            self._objects[obj.key] = obj
        if len(self._events) >= self._capacity:
            self._oldest = self._events.popleft().resource_version
            self._evicted = True
        self._events.append(event)
        self.revision = event.resource_version
        for watcher in list(self._watchers):
            if watcher.wants(obj.key) and not watcher.send(event):
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

    def get(self, key: str) -> storage_pb2.Object:
        obj = self._objects.get(key)
        if obj is None:
            raise KeyNotFound(key)
        return obj

    def list(self, prefix: str) -> ListResult:
        items = [obj for key, obj in sorted(self._objects.items()) if key.startswith(prefix)]
        return ListResult(items=items, resource_version=self.revision)

    async def wait_for_revision(self, revision: int) -> None:
        """Return once the cache has reached revision; 504-style error after a while."""

        async def reached() -> None:
            async with self._progress:
                await self._progress.wait_for(lambda: self.revision >= revision)

        try:
            await asyncio.wait_for(reached(), FUTURE_RV_WAIT_SECONDS)
        except TimeoutError:
            raise TooLargeResourceVersion(
                self.root, f"Too large resource version: {revision}, current: {self.revision}"
            ) from None

    async def watch(self, key: str, since: int, recursive: bool) -> AsyncGenerator[Event, None]:
        await self.wait_synced()
        if since > self.revision:
            await self.wait_for_revision(since)
        watcher = _Watcher(key=key, recursive=recursive)
        # From here to registering the watcher nothing awaits, so no event is
        # missed or seen twice between the replay and the live stream.
        if since == 0:
            initial = [
                Event(type=Event.ADDED, object=obj, resource_version=obj.resource_version)
                for k, obj in sorted(self._objects.items())
                if watcher.wants(k)
            ]
        elif since < self._oldest:
            raise Expired(key, f"too old resource version: {since} ({self._oldest})")
        else:
            initial = [
                e
                for e in self._events
                if e.resource_version > since and watcher.wants(e.object.key)
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
