"""The storage contract as the skeleton defines it, run against the storage
service and the cacher alike (each over real gRPC on a real etcd)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncGenerator

import grpc
import orjson
import pytest

from services.cacher.cache import WatchCache
from strata.etcd import Etcd
from strata.proto.storage.v1 import storage_pb2
from strata.storage import (
    Conflict,
    Expired,
    GetOptions,
    GrpcStorage,
    KeyExists,
    KeyNotFound,
    ListOptions,
    Preconditions,
    Predicate,
    WatchOptions,
    guaranteed_update,
)
from strata.storage._requests import compile_predicate

Event = storage_pb2.WatchEvent
EVERYTHING = compile_predicate("/", Predicate())


def resource() -> str:
    """A resource prefix of its own, so tests sharing one etcd never meet."""
    return f"/things{uuid.uuid4().hex[:8]}/"


def obj(name: str, namespace: str = "ns", **data: str) -> bytes:
    return orjson.dumps(
        {
            "apiVersion": "v1",
            "kind": "Thing",
            "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}"},
            "data": data,
        }
    )


async def next_events(
    events: AsyncGenerator[storage_pb2.WatchEvent, None], count: int
) -> list[storage_pb2.WatchEvent]:
    async with asyncio.timeout(10):
        return [await anext(events) for _ in range(count)]


async def test_create_then_get_carries_the_revision(store: GrpcStorage) -> None:
    key = f"{resource()}ns/a"
    created = await store.create(key, obj("a", k="v"))
    assert created.resource_version > 0
    assert (created.name, created.namespace, created.uid) == ("a", "ns", "uid-a")
    got = await store.get(key)
    assert got.resource_version == created.resource_version
    body = orjson.loads(got.value)
    assert body["metadata"]["resourceVersion"] == str(created.resource_version)
    assert body["data"] == {"k": "v"}


async def test_create_twice_is_key_exists(store: GrpcStorage) -> None:
    key = f"{resource()}ns/a"
    await store.create(key, obj("a"))
    with pytest.raises(KeyExists):
        await store.create(key, obj("a", changed="yes"))
    assert orjson.loads((await store.get(key)).value)["data"] == {}


async def test_get_missing_is_key_not_found(store: GrpcStorage) -> None:
    with pytest.raises(KeyNotFound):
        await store.get(f"{resource()}ns/missing")


async def test_update_is_compare_and_swap(store: GrpcStorage) -> None:
    key = f"{resource()}ns/a"
    created = await store.create(key, obj("a", v="1"))
    updated = await store.update(
        key, obj("a", v="2"), expected_resource_version=created.resource_version
    )
    assert updated.resource_version > created.resource_version
    with pytest.raises(Conflict):
        await store.update(key, obj("a", v="3"), expected_resource_version=created.resource_version)
    assert orjson.loads((await store.get(key)).value)["data"] == {"v": "2"}
    with pytest.raises(KeyNotFound):
        await store.update(f"{resource()}ns/none", obj("none"), expected_resource_version=1)


async def test_delete_returns_last_state_and_honours_preconditions(store: GrpcStorage) -> None:
    key = f"{resource()}ns/a"
    created = await store.create(key, obj("a", v="1"))
    with pytest.raises(Conflict):
        await store.delete(key, preconditions=Preconditions(uid="someone-else"))
    with pytest.raises(Conflict):
        await store.delete(key, preconditions=Preconditions(resource_version="1"))
    deleted = await store.delete(key, preconditions=Preconditions(uid="uid-a"))
    assert deleted.resource_version > created.resource_version
    assert orjson.loads(deleted.value)["data"] == {"v": "1"}
    with pytest.raises(KeyNotFound):
        await store.get(key)
    with pytest.raises(KeyNotFound):
        await store.delete(key)


async def test_list_reads_one_prefix_in_key_order(store: GrpcStorage) -> None:
    root = resource()
    await store.create(f"{root}ns1/b", obj("b", "ns1"))
    await store.create(f"{root}ns1/a", obj("a", "ns1"))
    last = await store.create(f"{root}ns10/c", obj("c", "ns10"))
    result = await store.list(f"{root}ns1/")
    assert [o.name for o in result.items] == ["a", "b"]
    assert result.resource_version >= last.resource_version
    everything = await store.list(root)
    assert [o.key for o in everything.items] == [f"{root}ns1/a", f"{root}ns1/b", f"{root}ns10/c"]


async def test_watch_from_revision_sees_every_change_once_in_order(store: GrpcStorage) -> None:
    root = resource()
    before = await store.create(f"{root}ns/before", obj("before"))
    events = store.watch(root, WatchOptions(resource_version=str(before.resource_version)))
    first = await store.create(f"{root}ns/a", obj("a", v="1"))
    second = await store.update(
        f"{root}ns/a", obj("a", v="2"), expected_resource_version=first.resource_version
    )
    third = await store.delete(f"{root}ns/a")
    seen = await next_events(events, 3)
    await events.aclose()
    assert [e.type for e in seen] == [Event.ADDED, Event.MODIFIED, Event.DELETED]
    assert [e.resource_version for e in seen] == [
        first.resource_version,
        second.resource_version,
        third.resource_version,
    ]
    assert orjson.loads(seen[2].object.value)["data"] == {"v": "2"}


async def test_watch_from_zero_starts_with_current_state(store: GrpcStorage) -> None:
    for rv in ("", "0"):
        root = resource()
        await store.create(f"{root}ns/a", obj("a"))
        await store.create(f"{root}ns/b", obj("b"))
        events = store.watch(root, WatchOptions(resource_version=rv))
        initial = await next_events(events, 2)
        assert {(e.type, e.object.name) for e in initial} == {
            (Event.ADDED, "a"),
            (Event.ADDED, "b"),
        }
        created = await store.create(f"{root}ns/c", obj("c"))
        (live,) = await next_events(events, 1)
        assert (live.type, live.resource_version) == (Event.ADDED, created.resource_version)
        await events.aclose()


async def test_watch_of_one_key_ignores_its_neighbours(store: GrpcStorage) -> None:
    root = resource()
    start = await store.create(f"{root}ns/other", obj("other"))
    events = store.watch(
        f"{root}ns/a",
        WatchOptions(resource_version=str(start.resource_version), recursive=False),
    )
    await store.create(f"{root}ns/ab", obj("ab"))
    created = await store.create(f"{root}ns/a", obj("a"))
    (event,) = await next_events(events, 1)
    await events.aclose()
    assert event.object.key == f"{root}ns/a"
    assert event.resource_version == created.resource_version


async def test_guaranteed_update_loses_no_update(store: GrpcStorage) -> None:
    key = f"{resource()}ns/counter"
    await store.create(key, obj("counter", n="0"))

    async def increment(current: storage_pb2.Object) -> bytes:
        body = orjson.loads(current.value)
        body["data"]["n"] = str(int(body["data"]["n"]) + 1)
        return orjson.dumps(body)

    await asyncio.gather(*(guaranteed_update(store, key, increment) for _ in range(20)))
    final = orjson.loads((await store.get(key, GetOptions(resource_version=""))).value)
    assert final["data"]["n"] == "20"


async def test_storage_watch_from_compacted_revision_is_expired(
    storage_address: str, etcd: Etcd
) -> None:
    channel = grpc.aio.insecure_channel(storage_address)
    store = GrpcStorage(channel)
    root = resource()
    old = await store.create(f"{root}ns/a", obj("a"))
    await store.update(
        f"{root}ns/a", obj("a", v="2"), expected_resource_version=old.resource_version
    )
    await etcd.compact(await store.current_revision())
    events = store.watch(root, WatchOptions(resource_version=str(old.resource_version - 1)))
    with pytest.raises(Expired):
        await next_events(events, 1)
    await channel.close()


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


async def test_ttl_expires_the_object_through_a_lease(store: GrpcStorage) -> None:
    root = resource()
    start = await store.create(f"{root}ns/anchor", obj("anchor"))
    await store.create(f"{root}ns/short", obj("short"), ttl_seconds=1)
    assert (await store.get(f"{root}ns/short")).name == "short"
    events = store.watch(root, WatchOptions(resource_version=str(start.resource_version)))
    added, deleted = await next_events(events, 2)
    await events.aclose()
    assert (added.type, deleted.type) == (Event.ADDED, Event.DELETED)
    assert deleted.object.name == "short"
    with pytest.raises(KeyNotFound):
        await store.get(f"{root}ns/short")
