"""WatchCache: one resource's current objects and a window of recent events,
kept by a reflector (list, then watch from the list's revision) and fanned out
to every watcher of the resource.

The reflector resumes a broken watch from the last revision it saw, and
relists only when storage says that revision is gone (410); a relist closes
the watchers, which resume from their last resourceVersion (or get 410 if
that left the window).

Every watch is served from the window, never from storage's history: one from
a revision older than the window gets 410 Expired, "too old resource version:
N (OLDEST)", as from kube's cacher; the window is sized by kube's rules
(window.py). A cache starts (lists) on its resource's first request, as kube's
do when the apiserver starts; the registry's garbage collector lists every
served resource, so in a running system that is at start.
A watch from a revision the cache has not reached yet waits for it.

The objects themselves, and the lists read from them, are CachedObjects
(objects.py). Watchers are indexed by the key or prefix they watch, so an event
reaches only those that can want it, and each event is encoded once for all of
them.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import time
from collections.abc import AsyncGenerator, Callable

from services.cacher import metrics
from services.cacher.objects import CachedObjects
from services.cacher.watchers import (
    DEFAULT_BUDGET_SECONDS,
    DEFAULT_BUFFER,
    Change,
    Watcher,
    WatcherGroup,
    encode,
)
from services.cacher.window import FRESH_SECONDS, LOWER_BOUND, EventWindow
from strata import telemetry
from strata.proto.storage.v1 import storage_pb2
from strata.storage import (
    Expired,
    ListOptions,
    ListResult,
    Storage,
    StorageError,
    TooLargeResourceVersion,
    Unavailable,
    WatchOptions,
    resource_of,
)
from strata.storage import wire_bytes as wire
from strata.storage.requests import Matcher, ends_initial_events, sends_initial_state
from strata.storage.watch_stream import Sink

Event = storage_pb2.WatchEvent
Object = storage_pb2.Object
SYNC_TIMEOUT_SECONDS = 10.0
# How long a read waits for a cache that has not synced before storage answers it
# (a cache whose list keeps failing, say on a value it cannot decrypt).
READ_SYNC_WAIT_SECONDS = 3.0
FUTURE_RV_WAIT_SECONDS = 3.0
BOOKMARK_FREQUENCY_SECONDS = 60.0
# How often the reflector's watch asks for progress on its own, so an idle
# resource's cache (and the bookmarks it sends) keeps up with etcd's revision. A
# read that needs the cache current asks at once (wait_for_revision).
PROGRESS_INTERVAL_SECONDS = 5.0
# How often a read still waiting for the cache asks for progress again.
PROGRESS_RETRY_SECONDS = 0.1

log = telemetry.get_logger("strata.cacher")


class WatchCache:
    def __init__(
        self,
        upstream: Storage,
        root: str,
        *,
        clock: Callable[[], float] = time.monotonic,
        fresh_seconds: float = FRESH_SECONDS,
        window_lower: int = LOWER_BOUND,
        window_upper: int | None = None,
        bookmark_frequency: float = BOOKMARK_FREQUENCY_SECONDS,
        progress_interval: float = PROGRESS_INTERVAL_SECONDS,
        watcher_buffer: int = DEFAULT_BUFFER,
        watcher_budget_seconds: float = DEFAULT_BUDGET_SECONDS,
        bookmark_ticker: bool = True,
        on_synced: Callable[[], None] | None = None,
    ) -> None:
        """fresh_seconds: the window's fresh duration; window_lower and window_upper
        replace kube's bounds (tests only). bookmark_ticker=False leaves sending
        bookmarks to send_due_bookmarks calls (tests driving the clock); on_synced
        is called when the first list has been stored."""
        self._upstream = upstream
        self._watcher_buffer, self._watcher_budget = watcher_buffer, watcher_budget_seconds
        self.root = root
        group, resource = resource_of(root)
        self._resource = f"{resource}.{group}" if group else resource
        self._clock = clock
        self._bookmark_frequency = bookmark_frequency
        self._progress_interval = progress_interval
        self.window: EventWindow[Change] = EventWindow(
            clock,
            fresh=fresh_seconds,
            lower=window_lower,
            upper=window_upper,
            on_resize=metrics.capacity.labels(self._resource).set,
        )
        self._objects = CachedObjects()
        self.revision = 0
        self._exact: dict[str, WatcherGroup] = {}
        self._prefixed: dict[str, WatcherGroup] = {}
        self._watcher_count = metrics.registered_watchers.labels(self._resource)
        self._received = metrics.events_received.labels(self._resource)
        self._dispatched = metrics.events_dispatched.labels(self._resource)
        self._sent = metrics.watch_events.labels(self._resource)
        self._terminated = metrics.terminated_watchers.labels(self._resource)
        self._synced = asyncio.Event()
        self._on_synced = on_synced
        self._progress = asyncio.Condition()
        self._progress_request: asyncio.Future[None] | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._bookmark_ticker_on = bookmark_ticker

    @property
    def synced(self) -> bool:
        return self._synced.is_set()

    def start(self) -> None:
        if not self._tasks:
            # The reflector outlives the request that created the cache: it must not
            # carry that request's trace context (its watch would join that trace).
            empty = contextvars.Context()
            self._tasks = [
                asyncio.create_task(self._reflect(), name=f"reflector {self.root}", context=empty)
            ]
            if self._bookmark_ticker_on:
                self._tasks.append(
                    asyncio.create_task(
                        self._bookmark_ticker(), name=f"bookmarks {self.root}", context=empty
                    )
                )

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._close_watchers()

    async def wait_synced(self, within: float = SYNC_TIMEOUT_SECONDS) -> None:
        try:
            await asyncio.wait_for(self._synced.wait(), within)
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
                    WatchOptions(
                        resource_version=str(self.revision),
                        progress_notify=True,
                        progress_interval_seconds=self._progress_interval,
                    ),
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
        self._close_watchers()
        self._objects.replace(result.items)
        self.revision = result.resource_version
        self.window.reset(result.resource_version)
        if not self._synced.is_set():
            self._synced.set()
            if self._on_synced is not None:
                self._on_synced()

    async def _apply(self, event: Event) -> None:
        if event.type == Event.BOOKMARK:
            # Upstream reached this revision with nothing new for this resource.
            self.revision = max(self.revision, event.resource_version)
        else:
            self._received.inc()
            obj = event.object
            previous = self._objects.find(obj.key)
            if event.type == Event.DELETED:
                self._objects.remove(obj.key)
            else:
                self._objects.store(obj)
            change = Change(event, previous)
            self.window.append(event.resource_version, change)
            self.revision = event.resource_version
            self._dispatch(change)
        async with self._progress:
            self._progress.notify_all()

    # --- watchers ----------------------------------------------------------------

    def _groups(self, key: str) -> list[WatcherGroup]:
        """The groups of watchers whose key or prefix covers key."""
        found = []
        if (exact := self._exact.get(key)) is not None:
            found.append(exact)
        at = key.find("/", 1)
        while at != -1:
            if (group := self._prefixed.get(key[: at + 1])) is not None:
                found.append(group)
            at = key.find("/", at + 1)
        return found

    def _dispatch(self, change: Change) -> None:
        self._dispatched.inc()
        sent = 0
        for group in self._groups(change.key):
            reached, behind = group.send(change)
            sent += reached
            for watcher in behind:
                self._unregister(watcher)
        self._sent.inc(sent)

    def _register(self, watcher: Watcher) -> None:
        index = self._prefixed if watcher.recursive else self._exact
        group = index.get(watcher.key)
        if group is None:
            group = index[watcher.key] = WatcherGroup()
        group.add(watcher)
        self._watcher_count.inc()

    def _unregister(self, watcher: Watcher) -> None:
        index = self._prefixed if watcher.recursive else self._exact
        group = index.get(watcher.key)
        if group is not None and group.discard(watcher):
            if not group.watchers:
                del index[watcher.key]
            self._watcher_count.dec()

    def watcher_count(self) -> int:
        groups = (*self._exact.values(), *self._prefixed.values())
        return sum(len(group.watchers) for group in groups)

    def _watchers(self) -> list[Watcher]:
        groups = (*self._exact.values(), *self._prefixed.values())
        return [watcher for group in groups for watcher in group.watchers]

    def _close_watchers(self) -> None:
        for watcher in self._watchers():
            watcher.close()
            self._unregister(watcher)

    async def _bookmark_ticker(self) -> None:
        tick = min(1.0, self._bookmark_frequency / 4)
        while True:
            await asyncio.sleep(tick)
            self.send_due_bookmarks()

    def send_due_bookmarks(self) -> int:
        """A BOOKMARK at the current revision to every watcher whose time has come;
        how many were sent."""
        if not self.synced:
            return 0
        now = self._clock()
        data: bytes | None = None
        sent = 0
        for watcher in self._watchers():
            due = watcher.next_bookmark
            if due is None or due > now:
                continue
            if data is None:
                data = encode(Event(type=Event.BOOKMARK, resource_version=self.revision))
            watcher.send(data)
            watcher.schedule_bookmark(now, self._bookmark_frequency)
            sent += 1
        return sent

    # --- reads -------------------------------------------------------------------

    def get(self, key: str) -> Object:
        return self._objects.get(key)

    def read_list(self, prefix: str, matches: Matcher, limit: int = 0) -> ListResult:
        """The objects under prefix at the cache's revision, at most limit of them,
        with a continue token storage accepts for the rest."""
        return self._objects.read_list(prefix, matches, limit, self.revision)

    async def wait_for_revision(self, revision: int) -> None:
        """Return once the cache has reached revision; TooLargeResourceVersion after a while.

        Meanwhile storage is asked for progress, so a resource with nothing new
        learns at once that it has reached revision (kube's progress requests)."""
        if self.revision >= revision:
            return
        started = time.monotonic()

        def caught_up() -> bool:
            return self.revision >= revision

        async def reached() -> None:
            while not caught_up():
                await self._request_progress()
                async with self._progress:
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(PROGRESS_RETRY_SECONDS):
                            await self._progress.wait_for(caught_up)

        try:
            await asyncio.wait_for(reached(), FUTURE_RV_WAIT_SECONDS)
        except TimeoutError:
            raise TooLargeResourceVersion(
                self.root, f"Too large resource version: {revision}, current: {self.revision}"
            ) from None
        finally:
            metrics.read_wait.labels(self._resource).observe(time.monotonic() - started)

    async def _request_progress(self) -> None:
        """One progress request upstream for every read waiting at the moment."""
        if self._progress_request is None or self._progress_request.done():
            self._progress_request = asyncio.ensure_future(self._upstream.request_progress())
        try:
            await asyncio.shield(self._progress_request)
        except StorageError as e:  # the periodic progress still comes
            log.warning("progress request failed", root=self.root, error=str(e))

    def _initial(self, watcher: Watcher) -> list[bytes]:
        """The current state a watcher wants, as encoded ADDED events."""
        objects = self._objects
        keys = objects.keys_under(watcher.key) if watcher.recursive else [watcher.key]
        events = []
        for key in keys:
            obj = objects.find(key)
            if obj is None or not watcher.matches(obj):
                continue
            events.append(wire.added_event(objects.encoded(key, obj), obj.resource_version))
        return events

    async def _open(
        self,
        key: str,
        since: int,
        opts: WatchOptions,
        matches: Matcher,
        sink: Sink | None = None,
    ) -> tuple[Watcher, list[bytes]]:
        """A registered watcher and the events it gets before live ones (the initial
        state or the replay from since); with a sink, those went to it already."""
        await self.wait_synced()
        if since > self.revision:
            if sends_initial_state(since, opts):
                await self.wait_for_revision(since)  # 504 "Too large" after a while
            elif not await self._reached(since, opts.timeout_seconds):
                return self._ended(key, opts, matches), []
        now = self._clock()
        watcher = Watcher(
            key=key,
            recursive=opts.recursive,
            matches=matches,
            bookmarks=opts.progress_notify,
            deadline=now + opts.timeout_seconds if opts.timeout_seconds > 0 else None,
            buffer=self._watcher_buffer,
            budget_seconds=self._watcher_budget,
            on_terminated=self._terminated.inc,
            sink=sink,
        )
        watcher.schedule_bookmark(now, self._bookmark_frequency)
        # From here to registering the watcher nothing awaits, so no event is
        # missed or seen twice between the initial events and the live stream.
        initial: list[bytes]
        if sends_initial_state(since, opts):
            initial = self._initial(watcher)
            if ends_initial_events(opts):
                initial.append(
                    encode(
                        Event(
                            type=Event.BOOKMARK,
                            resource_version=self.revision,
                            initial_events_end=True,
                        )
                    )
                )
        else:
            # sendInitialEvents=false from "" or "0": from now, with nothing before.
            since = since or self.revision
            initial = [
                data
                for change in self.window.since(since, key)
                if watcher.wants(change.key) and (data := change.seen_through(matches)) is not None
            ]
        self._sent.inc(len(initial))
        if sink is not None:
            for data in initial:
                sink.initial(data)
            initial = []
        self._register(watcher)
        return watcher, initial

    async def _reached(self, revision: int, within: float) -> bool:
        """Wait (up to within seconds, if above 0) for the cache to reach revision:
        a watch from a revision not reached yet waits for it, as kube's does, on
        the reflector's own progress; False if the time ran out."""

        def caught_up() -> bool:
            return self.revision >= revision

        try:
            async with asyncio.timeout(within if within > 0 else None), self._progress:
                await self._progress.wait_for(caught_up)
        except TimeoutError:
            return False
        return True

    def _ended(self, key: str, opts: WatchOptions, matches: Matcher) -> Watcher:
        """A watcher closed before it began (its timeout came first)."""
        watcher = Watcher(key=key, recursive=opts.recursive, matches=matches, bookmarks=False)
        watcher.close()
        return watcher

    def _close(self, watcher: Watcher) -> None:
        watcher.close()
        self._unregister(watcher)

    async def watch(
        self,
        key: str,
        since: int,
        opts: WatchOptions,
        matches: Matcher,
    ) -> AsyncGenerator[bytes, None]:
        """Encoded events for one watcher: the initial state or the replay from since,
        then live events, bookmarks when asked for, until closed."""
        watcher, initial = await self._open(key, since, opts, matches)
        try:
            for event in initial:
                yield event
            while (data := await watcher.next()) is not None:
                yield data
        finally:
            self._close(watcher)

    async def watch_into(
        self, key: str, since: int, opts: WatchOptions, matches: Matcher, sink: Sink
    ) -> None:
        """watch, with every event put into sink as it is dispatched; returns when
        the watcher is closed."""
        watcher, _ = await self._open(key, since, opts, matches, sink)
        try:
            await watcher.wait_closed()
        finally:
            self._close(watcher)
