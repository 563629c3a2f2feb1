"""CachedStorage: the storage contract served from watch caches, with writes
and the reads the cache cannot answer delegated to the storage service.

As kube-apiserver, it caches every resource but those whose watch cache is
turned off (--watch-cache-sizes resource#0; kube turns off events' by
default): their reads and watches go to the storage service, so a watch of
them replays etcd's history (until compaction) instead of the cache's window.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, Callable

from services.cacher.cache import (
    BOOKMARK_FREQUENCY_SECONDS,
    PROGRESS_INTERVAL_SECONDS,
    READ_SYNC_WAIT_SECONDS,
    WatchCache,
)
from services.cacher.decision import Op, Plan, plan
from services.cacher.revisions import CurrentRevisions
from services.cacher.window import FRESH_SECONDS
from strata.proto.storage.v1 import storage_pb2
from strata.storage import (
    GetOptions,
    InvalidObject,
    KeyNotFound,
    ListOptions,
    ListResult,
    Preconditions,
    Storage,
    TooLargeResourceVersion,
    Unavailable,
    WatchOptions,
    resource_root,
)
from strata.storage.requests import check_list, check_match, compile_predicate, revision
from strata.storage.watch_stream import Sink, encoded, pump

# kube-apiserver's DefaultWatchCacheSizes: events (core and events.k8s.io, one
# store) are written often and watched from now, so they are not cached.
UNCACHED = frozenset({"/events/"})


class CachedStorage:
    def __init__(
        self,
        upstream: Storage,
        *,
        clock: Callable[[], float] = time.monotonic,
        fresh_seconds: float = FRESH_SECONDS,
        uncached: frozenset[str] = UNCACHED,
        bookmark_frequency: float = BOOKMARK_FREQUENCY_SECONDS,
        progress_interval: float = PROGRESS_INTERVAL_SECONDS,
    ) -> None:
        """fresh_seconds: every event window's fresh duration (window.fresh_seconds
        of the request timeout); uncached: the resource roots ("/events/") whose
        reads and watches go to storage, as kube's with a watch cache size of 0."""
        self._upstream = upstream
        self._clock = clock
        self._fresh_seconds = fresh_seconds
        self._uncached = uncached
        self._bookmark_frequency = bookmark_frequency
        self._progress_interval = progress_interval
        self._caches: dict[str, WatchCache] = {}
        self._readiness_changed = asyncio.Event()
        self._revisions = CurrentRevisions(upstream.current_revision)

    @staticmethod
    def _root(key: str) -> str:
        try:
            return resource_root(key)
        except ValueError as e:
            raise InvalidObject(key, str(e)) from None

    def cached(self, key: str) -> bool:
        """Whether key's resource is served from a cache."""
        return self._root(key) not in self._uncached

    def cache(self, key: str) -> WatchCache:
        """The cache of key's resource, started on first use."""
        root = self._root(key)
        cache = self._caches.get(root)
        if cache is None:
            cache = self._caches[root] = WatchCache(
                self._upstream,
                root,
                clock=self._clock,
                fresh_seconds=self._fresh_seconds,
                bookmark_frequency=self._bookmark_frequency,
                progress_interval=self._progress_interval,
                on_synced=self._changed,
            )
            cache.start()
            self._changed()
        return cache

    def _changed(self) -> None:
        self._readiness_changed.set()
        self._readiness_changed = asyncio.Event()

    def ready(self) -> bool:
        """Whether every cache started so far has synced once."""
        return all(cache.synced for cache in self._caches.values())

    async def readiness(self) -> AsyncGenerator[bool, None]:
        """ready(), then again each time it may have changed."""
        while True:
            changed = self._readiness_changed
            yield self.ready()
            await changed.wait()

    def caches(self) -> list[WatchCache]:
        return list(self._caches.values())

    async def stop(self) -> None:
        for cache in self._caches.values():
            await cache.stop()

    # Writes go to storage as they came, envelope and all: the cacher decodes nothing.

    async def create(
        self,
        key: str,
        value: bytes,
        *,
        ttl_seconds: int = 0,
        envelope: storage_pb2.Envelope | None = None,
    ) -> storage_pb2.Object:
        return await self._upstream.create(key, value, ttl_seconds=ttl_seconds, envelope=envelope)

    async def update(
        self,
        key: str,
        value: bytes,
        *,
        expected_resource_version: int,
        ttl_seconds: int = 0,
        envelope: storage_pb2.Envelope | None = None,
    ) -> storage_pb2.Object:
        return await self._upstream.update(
            key,
            value,
            expected_resource_version=expected_resource_version,
            ttl_seconds=ttl_seconds,
            envelope=envelope,
        )

    async def delete(
        self, key: str, *, preconditions: Preconditions | None = None
    ) -> storage_pb2.Object:
        return await self._upstream.delete(key, preconditions=preconditions)

    async def current_revision(self) -> int:
        return await self._revisions.current()

    async def count(self, prefix: str) -> int:
        return await self._upstream.count(prefix)

    async def compact(self, revision: int) -> None:
        await self._upstream.compact(revision)

    async def request_progress(self) -> None:
        await self._upstream.request_progress()

    async def _fresh(self, cache: WatchCache, how: Plan, wanted: int) -> bool:
        """Wait until cache is fresh enough for how; False when storage must answer."""
        try:
            await cache.wait_synced(READ_SYNC_WAIT_SECONDS)
        except Unavailable:
            return False  # not synced (yet): storage answers, or says what is wrong
        if how is Plan.CACHE:
            return True
        if how is Plan.CACHE_NOT_OLDER:
            await cache.wait_for_revision(wanted)
            return True
        try:
            await cache.wait_for_revision(await self._revisions.current())
        except TooLargeResourceVersion:
            return False  # the cache lags: storage answers this consistent read
        return True

    async def get(self, key: str, opts: GetOptions = GetOptions()) -> storage_pb2.Object:
        wanted = revision(key, opts.resource_version)
        check_match(key, opts.resource_version, opts.resource_version_match)
        how = plan(Op.GET, opts.resource_version, match=opts.resource_version_match)
        cache = self.cache(key) if how is not Plan.STORAGE and self.cached(key) else None
        if cache is None or not await self._fresh(cache, how, wanted):
            return await self._upstream.get(key, opts)
        try:
            return cache.get(key)
        except KeyNotFound:
            if opts.ignore_not_found:
                return storage_pb2.Object(key=key, resource_version=cache.revision)
            raise

    async def list(self, prefix: str, opts: ListOptions = ListOptions()) -> ListResult:
        check_list(prefix, opts)
        how = plan(
            Op.LIST,
            opts.resource_version,
            match=opts.resource_version_match,
            continuing=bool(opts.continue_token),
        )
        matches = compile_predicate(prefix, opts.predicate)
        cache = self.cache(prefix) if how is not Plan.STORAGE and self.cached(prefix) else None
        wanted = revision(prefix, opts.resource_version)
        if cache is None or not await self._fresh(cache, how, wanted):
            return await self._upstream.list(prefix, opts)
        return cache.read_list(prefix, matches, opts.limit)

    async def _watch_cache(self, key: str, opts: WatchOptions) -> tuple[WatchCache, int]:
        """The cache that serves this watch, made fresh enough for it, and the
        revision the watch starts after. Every watch is the cache's: it replays
        from its window or answers 410 Expired, never asks storage for history."""
        since = revision(key, opts.resource_version)
        cache = self.cache(key)
        how = plan(Op.WATCH, opts.resource_version, send_initial_events=opts.send_initial_events)
        await cache.wait_synced()
        await self._fresh(cache, how, since)
        return cache, since

    async def watch_encoded(
        self, key: str, opts: WatchOptions = WatchOptions()
    ) -> AsyncGenerator[bytes, None]:
        """The watch as encoded WatchEvents, each encoded once for all watchers."""
        matches = compile_predicate(key, opts.predicate)
        if not self.cached(key):
            async for data in encoded(self._upstream.watch(key, opts)):
                yield data
            return
        cache, since = await self._watch_cache(key, opts)
        async for data in cache.watch(key, since, opts, matches):
            yield data

    async def watch_into(self, key: str, opts: WatchOptions, sink: Sink) -> None:
        """The watch's encoded events put into sink straight from the cache's
        dispatch (Storage/WatchStream); returns when the watch ends."""
        matches = compile_predicate(key, opts.predicate)
        if not self.cached(key):
            await pump(encoded(self._upstream.watch(key, opts)), sink)
            return
        cache, since = await self._watch_cache(key, opts)
        await cache.watch_into(key, since, opts, matches, sink)

    async def watch(
        self, key: str, opts: WatchOptions = WatchOptions()
    ) -> AsyncGenerator[storage_pb2.WatchEvent, None]:
        async for data in self.watch_encoded(key, opts):
            yield storage_pb2.WatchEvent.FromString(data)
