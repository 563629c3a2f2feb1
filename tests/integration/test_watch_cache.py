"""The watch cache's own behaviour, beyond the storage contract it shares with
the storage service (tests/conformance): its event window and cached reads."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import grpc
import orjson
import pytest

from services.cacher.cache import WatchCache
from strata.proto.storage.v1 import storage_pb2
from strata.storage import Expired, GetOptions, GrpcStorage, ListOptions, Predicate
from strata.storage._requests import compile_predicate

EVERYTHING = compile_predicate("/", Predicate())


def resource() -> str:
    """A resource prefix of its own, so tests sharing one etcd never meet."""
    return f"/things{uuid.uuid4().hex[:8]}/"


def obj(name: str) -> bytes:
    return orjson.dumps(
        {"apiVersion": "v1", "kind": "Thing", "metadata": {"name": name, "namespace": "ns"}}
    )


async def next_events(
    events: AsyncIterator[storage_pb2.WatchEvent], count: int
) -> list[storage_pb2.WatchEvent]:
    async with asyncio.timeout(10):
        return [await anext(events) for _ in range(count)]


async def test_cache_window_replays_or_says_expired(storage_address: str) -> None:
    channel = grpc.aio.insecure_channel(storage_address)
    upstream = GrpcStorage(channel)
    root = resource()
    cache = WatchCache(upstream, root, capacity=3)
    cache.start()
    await cache.wait_synced()
    revisions = []
    for i in range(5):
        created = await upstream.create(f"{root}ns/o{i}", obj(f"o{i}"))
        revisions.append(created.resource_version)
    await cache.wait_for_revision(revisions[-1])
    # The window holds the last three events: a watch from just before them replays them.
    replay = cache.watch(root, revisions[1], True, EVERYTHING)
    seen = await next_events(replay, 3)
    assert [e.resource_version for e in seen] == revisions[2:]
    await replay.aclose()
    too_old = cache.watch(root, revisions[0], True, EVERYTHING)
    with pytest.raises(Expired):
        await next_events(too_old, 1)
    # Reads from the cache see the latest state.
    listed = cache.list(root, EVERYTHING)
    assert [o.name for o in listed.items] == [f"o{i}" for i in range(5)]
    assert listed.resource_version == revisions[-1]
    await cache.stop()
    await channel.close()


async def test_cached_reads_at_zero_come_from_the_cache(cacher_address: str) -> None:
    channel = grpc.aio.insecure_channel(cacher_address)
    store = GrpcStorage(channel)
    root = resource()
    created = await store.create(f"{root}ns/a", obj("a"))
    # A consistent read goes to storage and sees the write at once.
    assert (await store.get(f"{root}ns/a")).resource_version == created.resource_version
    async with asyncio.timeout(10):
        while True:
            listed = await store.list(root, ListOptions(resource_version="0"))
            if listed.resource_version >= created.resource_version:
                break
            await asyncio.sleep(0.01)
    assert [o.name for o in listed.items] == ["a"]
    got = await store.get(f"{root}ns/a", GetOptions(resource_version="0"))
    assert got.value == created.value
    await channel.close()
