"""guaranteed_update told the version the caller means to change starts from
a read at any revision when that read has exactly that version (the cacher
answers it from its cache, with no read of etcd), as kube's cacher hands
GuaranteedUpdate its cached object; a try that fails or changes nothing on
that copy is judged again on a consistent read. The registry's updates name
the version their request carried."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import AsyncIterator, Awaitable, Callable

import grpc
import orjson
import pytest

from services.registry.builtin.resources import CONFIGMAPS, NAMESPACES
from services.registry.generic.store import Store
from strata.proto.storage.v1 import storage_pb2
from strata.storage import GetOptions, GrpcStorage, guaranteed_update
from tests.support import hops
from tests.support.registry_tester import configmap

_names = itertools.count()


class Reads(GrpcStorage):
    """The cacher's storage, noting the resourceVersion of every read; a
    stand-in copy (a cache behind etcd) answers reads at any revision when set."""

    def __init__(self, channel: grpc.aio.Channel) -> None:
        super().__init__(channel)
        self.asked: list[str] = []
        self.behind: storage_pb2.Object | None = None

    async def get(self, key: str, opts: GetOptions = GetOptions()) -> storage_pb2.Object:
        self.asked.append(opts.resource_version)
        if opts.resource_version == "0" and self.behind is not None:
            return self.behind
        return await super().get(key, opts)


@pytest.fixture
async def cached(cacher_address: str) -> AsyncIterator[Reads]:
    async with hops.dial(cacher_address) as channel:
        storage = Reads(channel)
        yield storage
        await storage.close()


async def cached_at(storage: Reads, key: str, version: int) -> None:
    """Once the cache holds key at version (and forget the reads made meanwhile)."""
    deadline = time.monotonic() + 10
    while (await storage.get(key, GetOptions(resource_version="0"))).resource_version != version:
        assert time.monotonic() < deadline, "the cache did not catch up"
        await asyncio.sleep(0.01)
    storage.asked.clear()


async def stored(storage: Reads, value: dict[str, object]) -> tuple[str, storage_pb2.Object]:
    """A new object, once the cache holds it."""
    key = f"/things/ns/cached-{next(_names)}"
    obj = await storage.create(key, orjson.dumps({"metadata": {"name": "x"}, **value}))
    await cached_at(storage, key, obj.resource_version)
    return key, obj


def with_field(name: str, value: object) -> Callable[[storage_pb2.Object], Awaitable[bytes]]:
    async def change(current: storage_pb2.Object) -> bytes:
        obj = orjson.loads(current.value)
        obj[name] = value
        return orjson.dumps(obj)

    return change


async def test_the_cached_copy_at_the_expected_version_is_the_only_read(cached: Reads) -> None:
    key, obj = await stored(cached, {"n": 1})
    updated = await guaranteed_update(
        cached, key, with_field("n", 2), expected_resource_version=obj.resource_version
    )
    assert cached.asked == ["0"]
    assert orjson.loads(updated.value)["n"] == 2
    assert updated.resource_version > obj.resource_version


async def test_a_cached_copy_at_another_version_is_not_used(cached: Reads) -> None:
    key, obj = await stored(cached, {"n": 1})
    newer = await cached.update(
        key, orjson.dumps({"metadata": {"name": "x"}, "n": 5}),
        expected_resource_version=obj.resource_version,
    )  # fmt: skip
    await cached_at(cached, key, newer.resource_version)
    seen: list[int] = []

    async def bump(current: storage_pb2.Object) -> bytes:
        seen.append(current.resource_version)
        return await with_field("n", orjson.loads(current.value)["n"] + 1)(current)

    updated = await guaranteed_update(
        cached, key, bump, expected_resource_version=obj.resource_version
    )
    assert cached.asked == ["0", ""]
    assert seen == [newer.resource_version]
    assert orjson.loads(updated.value)["n"] == 6


async def test_no_change_to_the_cached_copy_is_confirmed_on_a_consistent_read(
    cached: Reads,
) -> None:
    key, obj = await stored(cached, {"n": 1})

    async def unchanged(current: storage_pb2.Object) -> bytes:
        return current.value

    kept = await guaranteed_update(
        cached, key, unchanged, expected_resource_version=obj.resource_version
    )
    assert cached.asked == ["0", ""]
    assert kept.resource_version == obj.resource_version


async def test_a_try_that_fails_on_a_copy_behind_etcd_is_tried_again_on_the_latest(
    cached: Reads,
) -> None:
    key, obj = await stored(cached, {"n": 1})
    newer = await cached.update(
        key, orjson.dumps({"metadata": {"name": "x"}, "n": 5}),
        expected_resource_version=obj.resource_version,
    )  # fmt: skip
    cached.behind = obj  # the cache has not seen the update yet
    tried: list[int] = []

    async def needs_five(current: storage_pb2.Object) -> bytes:
        tried.append(current.resource_version)
        if orjson.loads(current.value)["n"] != 5:
            raise ValueError("not five")
        return await with_field("n", 6)(current)

    cached.asked.clear()
    updated = await guaranteed_update(
        cached, key, needs_five, expected_resource_version=obj.resource_version
    )
    assert tried == [obj.resource_version, newer.resource_version]
    assert orjson.loads(updated.value)["n"] == 6

    # Where the consistent read finds the same version, the failure stands.
    cached.behind = updated
    with pytest.raises(ValueError, match="not five"):
        await guaranteed_update(
            cached, key, needs_five, expected_resource_version=updated.resource_version
        )


async def test_a_registry_update_naming_its_version_starts_from_the_cached_copy(
    cached: Reads,
) -> None:
    namespace = f"cached-{next(_names)}"
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
    await Store(NAMESPACES, cached).create("", orjson.dumps(body))
    configmaps = Store(CONFIGMAPS, cached)
    created = orjson.loads(await configmaps.create(namespace, orjson.dumps(configmap("cm"))))
    version = int(created["metadata"]["resourceVersion"])
    await cached_at(cached, CONFIGMAPS.key(namespace, "cm"), version)

    created["data"] = {"changed": "yes"}
    updated = orjson.loads(await configmaps.update(namespace, "cm", orjson.dumps(created)))
    assert cached.asked == ["0"]
    assert updated["data"] == {"changed": "yes"}
    assert int(updated["metadata"]["resourceVersion"]) > version
