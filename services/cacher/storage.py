"""CachedStorage: the storage contract served from watch caches, with writes
and the reads the cache cannot answer delegated to the storage service."""

from __future__ import annotations

from collections.abc import AsyncGenerator

from services.cacher.cache import WatchCache
from services.cacher.decision import Op, served_from_cache
from strata.proto.storage.v1 import storage_pb2
from strata.storage import (
    GetOptions,
    InvalidObject,
    KeyNotFound,
    ListOptions,
    ListResult,
    Preconditions,
    Storage,
    WatchOptions,
    resource_root,
)
from strata.storage._requests import check_list, check_match, compile_predicate, revision


class CachedStorage:
    def __init__(self, upstream: Storage) -> None:
        self._upstream = upstream
        self._caches: dict[str, WatchCache] = {}

    def _cache(self, key: str) -> WatchCache:
        try:
            # One cache per resource.
            root = resource_root(key)
        except ValueError as e:
            raise InvalidObject(key, str(e)) from None
        cache = self._caches.get(root)
        if cache is None:
            cache = self._caches[root] = WatchCache(self._upstream, root)
            cache.start()
        return cache

    async def stop(self) -> None:
        for cache in self._caches.values():
            await cache.stop()

    async def create(self, key: str, value: bytes, *, ttl_seconds: int = 0) -> storage_pb2.Object:
        return await self._upstream.create(key, value, ttl_seconds=ttl_seconds)

    async def update(
        self, key: str, value: bytes, *, expected_resource_version: int
    ) -> storage_pb2.Object:
        return await self._upstream.update(
            key, value, expected_resource_version=expected_resource_version
        )

    async def delete(
        self, key: str, *, preconditions: Preconditions | None = None
    ) -> storage_pb2.Object:
        return await self._upstream.delete(key, preconditions=preconditions)

    async def current_revision(self) -> int:
        return await self._upstream.current_revision()

    async def count(self, prefix: str) -> int:
        return await self._upstream.count(prefix)

    async def compact(self, revision: int) -> None:
        await self._upstream.compact(revision)

    async def get(self, key: str, opts: GetOptions = GetOptions()) -> storage_pb2.Object:
        revision(key, opts.resource_version)
        check_match(key, opts.resource_version, opts.resource_version_match)
        if not served_from_cache(Op.GET, opts.resource_version, match=opts.resource_version_match):
            return await self._upstream.get(key, opts)
        cache = self._cache(key)
        await cache.wait_synced()
        try:
            return cache.get(key)
        except KeyNotFound:
            if opts.ignore_not_found:
                return storage_pb2.Object(key=key, resource_version=cache.revision)
            raise

    async def list(self, prefix: str, opts: ListOptions = ListOptions()) -> ListResult:
        check_list(prefix, opts)
        if not served_from_cache(
            Op.LIST,
            opts.resource_version,
            match=opts.resource_version_match,
            continuing=bool(opts.continue_token),
        ):
            return await self._upstream.list(prefix, opts)
        matches = compile_predicate(prefix, opts.predicate)
        cache = self._cache(prefix)
        await cache.wait_synced()
        return cache.list(prefix, matches)

    async def watch(
        self, key: str, opts: WatchOptions = WatchOptions()
    ) -> AsyncGenerator[storage_pb2.WatchEvent, None]:
        since = revision(key, opts.resource_version)
        matches = compile_predicate(key, opts.predicate)
        cache = self._cache(key)
        await cache.wait_synced()
        if cache.predates_window(since):
            async for event in self._upstream.watch(key, opts):
                yield event
            return
        async for event in cache.watch(
            key, since, opts.recursive, matches, progress=opts.progress_notify
        ):
            yield event
