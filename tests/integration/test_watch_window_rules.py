"""The watch cache's window on a real etcd behind a real storage service,
sized by kube v1.36's rules (a fake clock stands in for the minutes kube's
fresh duration needs), and the resources kube does not cache.

Recorded from kube (`with_kube.sh`, podtemplates: 200 created within 2s, then
one more): with the default --request-timeout (fresh duration 75s) the write
80s later shrank the window from 200 to 100, so a watch from the 100th
event's revision got "too old resource version: 308 (309)" and one from the
101st replayed 100 events; with --request-timeout=2m (135s) the same write,
and one 128s after the first event, grew it to 400 instead, and the watch from
the first event's revision replayed all 200. A watch of events from
resourceVersion=1 was answered from etcd (kube has no events cache).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import orjson
import pytest

from services.cacher.storage import CachedStorage
from services.cacher.window import fresh_seconds
from strata.proto.storage.v1 import storage_pb2
from strata.storage import Expired, GrpcStorage, WatchOptions
from tests.support import hops

Event = storage_pb2.WatchEvent


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def obj(name: str, namespace: str = "ns") -> bytes:
    return orjson.dumps(
        {"apiVersion": "v1", "kind": "Thing", "metadata": {"name": name, "namespace": namespace}}
    )


@pytest.fixture
async def upstream(storage_address: str) -> AsyncIterator[GrpcStorage]:
    channel = hops.dial(storage_address)
    yield GrpcStorage(channel)
    await channel.close()


async def replayed(cached: CachedStorage, key: str, since: int, count: int) -> list[int]:
    """The revisions of the first count events a watch from since gets."""
    opts = WatchOptions(resource_version=str(since), recursive=True)
    events = cached.watch(key, opts)
    got: list[int] = []
    try:
        async with asyncio.timeout(10):
            while len(got) < count:
                event = await anext(events)
                if event.type != Event.BOOKMARK:
                    got.append(event.resource_version)
    finally:
        await events.aclose()
    return got


async def expired(cached: CachedStorage, key: str, since: int) -> str:
    events = cached.watch(key, WatchOptions(resource_version=str(since), recursive=True))
    with pytest.raises(Expired) as caught:
        await anext(events)
    await events.aclose()
    message = str(caught.value)
    return message[message.index("too old") :]


async def kubes_experiment(
    upstream: GrpcStorage, request_timeout: float
) -> tuple[CachedStorage, str, list[int]]:
    """200 objects written at once, then one more 80s later (by the clock)."""
    clock = Clock()
    cached = CachedStorage(upstream, clock=clock, fresh_seconds=fresh_seconds(request_timeout))
    root = f"/things{uuid.uuid4().hex[:8]}/"
    cache = cached.cache(root)
    await cache.wait_synced()
    revisions = [
        (await upstream.create(f"{root}ns/o{i}", obj(f"o{i}"))).resource_version for i in range(200)
    ]
    await cache.wait_for_revision(revisions[-1])
    assert cache.window.capacity == 200  # grown at the 101st
    clock.now += 80
    revisions.append((await upstream.create(f"{root}ns/last", obj("last"))).resource_version)
    await cache.wait_for_revision(revisions[-1])
    return cached, root, revisions


async def test_an_idle_window_shrinks_after_the_fresh_duration(upstream: GrpcStorage) -> None:
    cached, root, revisions = await kubes_experiment(upstream, request_timeout=60)
    try:
        assert cached.cache(root).window.capacity == 100
        oldest = revisions[101] - 1  # kube's N: the oldest event's revision minus one
        assert await expired(cached, root, revisions[99]) == (
            f"too old resource version: {revisions[99]} ({oldest})"
        )
        assert await replayed(cached, root, revisions[100], 100) == revisions[101:]
    finally:
        await cached.stop()


async def test_a_longer_request_timeout_keeps_more_history(upstream: GrpcStorage) -> None:
    cached, root, revisions = await kubes_experiment(upstream, request_timeout=120)
    try:
        assert cached.cache(root).window.capacity == 400  # 80s < 135s: still fresh
        assert await replayed(cached, root, revisions[0], 200) == revisions[1:]
    finally:
        await cached.stop()


async def test_events_are_watched_from_storage_as_kube_does_not_cache_them(
    upstream: GrpcStorage,
) -> None:
    ns = f"ns{uuid.uuid4().hex[:8]}"
    events_root, things = f"/events/{ns}/", f"/things{uuid.uuid4().hex[:8]}/"
    written = [
        (await upstream.create(f"{events_root}e{i}", obj(f"e{i}", ns))).resource_version
        for i in range(3)
    ]
    before = written[0] - 1
    await upstream.create(f"{things}ns/a", obj("a"))
    cached = CachedStorage(upstream)
    try:
        # A cache would list now and call `before` too old; storage replays it.
        assert await replayed(cached, events_root, before, 3) == written
        listed = await cached.list(events_root)
        assert [item.resource_version for item in listed.items] == written
        assert await expired(cached, things, before) == (
            f"too old resource version: {before} ({cached.cache(things).window.oldest()})"
        )
        assert [cache.root for cache in cached.caches()] == [things]
    finally:
        await cached.stop()
