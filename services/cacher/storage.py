"""CachedStorage: the storage contract served from watch caches, with writes
and the reads the cache cannot answer delegated to the storage service."""

from __future__ import annotations

from collections.abc import AsyncGenerator

from services.cacher.cache import WatchCache
from services.cacher.decision import Op, cache_root, served_from_cache
from strata.api.versions import parse_resource_version
from strata.proto.storage.v1 import storage_pb2
from strata.storage import (
    GetOptions,
    InvalidObject,
    ListOptions,
    ListResult,
    Preconditions,
    Storage,
    WatchOptions,
)


class CachedStorage:
    def __init__(self, upstream: Storage) -> None:
        self._upstream = upstream
        self._caches: dict[str, WatchCache] = {}

    def _cache(self, key: str) -> WatchCache:
        try:
            root = cache_root(key)
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

    async def get(self, key: str, opts: GetOptions = GetOptions()) -> storage_pb2.Object:
        if not served_from_cache(Op.GET, opts.resource_version):
            return await self._upstream.get(key, opts)
        cache = self._cache(key)
        await cache.wait_synced()
        return cache.get(key)

    async def list(self, prefix: str, opts: ListOptions = ListOptions()) -> ListResult:
        if not served_from_cache(Op.LIST, opts.resource_version):
            return await self._upstream.list(prefix, opts)
        cache = self._cache(prefix)
        await cache.wait_synced()
        return cache.list(prefix)

    async def watch(
        self, key: str, opts: WatchOptions = WatchOptions()
    ) -> AsyncGenerator[storage_pb2.WatchEvent, None]:
        try:
            since = parse_resource_version(opts.resource_version)
        except ValueError as e:
            raise InvalidObject(key, str(e)) from None
        cache = self._cache(key)
        await cache.wait_synced()
        if cache.predates_window(since):
            async for event in self._upstream.watch(key, opts):
                yield event
            return
        async for event in cache.watch(key, since, opts.recursive):
            yield event
