"""Storage/WatchStream over real gRPC on a real etcd: many watches on one
stream, opened and cancelled by id. From the cacher an event goes once for
every watch that gets it; from the storage service each watch gets its own."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Sequence

import orjson
import pytest

from strata.proto.storage.v1 import storage_pb2
from strata.storage import GrpcStorage, ListOptions, Predicate, WatchOptions, WatchStreamCall
from tests.support import hops

Frame = storage_pb2.WatchFrame


def obj(name: str, **labels: str) -> bytes:
    metadata = {"name": name, "namespace": "ns", "labels": labels}
    return orjson.dumps({"apiVersion": "v1", "kind": "Thing", "metadata": metadata})


@pytest.fixture(params=["cacher", "storage"])
async def storage(
    request: pytest.FixtureRequest, storage_address: str, cacher_address: str
) -> AsyncIterator[tuple[str, GrpcStorage]]:
    address = cacher_address if request.param == "cacher" else storage_address
    channel = hops.dial(address)
    client = GrpcStorage(channel)
    yield str(request.param), client
    await client.close()
    await channel.close()


async def event_frames(
    frames: AsyncIterator[Sequence[Frame]], deliveries: int, within: float = 10
) -> list[Frame]:
    """Event frames (bookmarks left out) until they carry deliveries events in all."""
    got: list[Frame] = []
    async with asyncio.timeout(within):
        while sum(len(f.ids) for f in got) < deliveries:
            for frame in await anext(frames):
                if frame.HasField("event") and frame.event.type != storage_pb2.WatchEvent.BOOKMARK:
                    got.append(frame)
    return got


async def test_one_frame_per_event_for_every_watch_that_gets_it(
    storage: tuple[str, GrpcStorage],
) -> None:
    kind, client = storage
    root = f"/streamed{uuid.uuid4().hex[:8]}/"
    # The cache starts before start is written, so its window reaches back to it.
    await client.list(root, ListOptions(resource_version="0"))
    start = await client.create(f"{root}ns/start", obj("start"))
    since = str(start.resource_version)
    call: WatchStreamCall = client.watch_stream()
    frames = call.frames()
    everything = WatchOptions(resource_version=since, recursive=True)
    for watch_id in (1, 2, 3):
        call.open(watch_id, root, everything)
    labelled = Predicate(label_selector="team=a")
    call.open(4, root, WatchOptions(resource_version=since, recursive=True, predicate=labelled))
    call.open(5, f"{root}ns/other", WatchOptions(resource_version=since))
    try:
        # Once x has reached them, every watch is live (not replaying from since).
        await client.create(f"{root}ns/x", obj("x", team="b"))
        first = await event_frames(frames, 3)
        assert sorted(i for f in first for i in f.ids) == [1, 2, 3]
        await client.create(f"{root}ns/z", obj("z", team="b"))
        live = await event_frames(frames, 3)
        assert sorted(i for f in live for i in f.ids) == [1, 2, 3]
        if kind == "cacher":
            assert [sorted(f.ids) for f in live] == [[1, 2, 3]]  # encoded once, sent once
        call.cancel(2)
        await asyncio.sleep(0.2)  # the cancel is on its way before the next write
        await client.create(f"{root}ns/y", obj("y", team="a"))
        second = await event_frames(frames, 3)
        assert sorted(i for f in second for i in f.ids) == [1, 3, 4]
        assert {f.event.object.name for f in second} == {"y"}
        if kind == "cacher":
            assert [sorted(f.ids) for f in second] == [[1, 3, 4]]
    finally:
        call.close()


async def test_a_watch_that_fails_ends_with_its_error_and_the_others_go_on(
    storage: tuple[str, GrpcStorage],
) -> None:
    _, client = storage
    root = f"/streamed{uuid.uuid4().hex[:8]}/"
    # The cache starts before start is written, so its window reaches back to it.
    await client.list(root, ListOptions(resource_version="0"))
    start = await client.create(f"{root}ns/start", obj("start"))
    call = client.watch_stream()
    frames = call.frames()
    call.open(7, root, WatchOptions(resource_version=str(start.resource_version), recursive=True))
    call.open(8, root, WatchOptions(resource_version="not-a-revision", recursive=True))
    try:
        async with asyncio.timeout(10):
            ended: list[Frame] = []
            while not ended:
                ended = [f for f in await anext(frames) if f.ended]
        assert list(ended[0].ids) == [8] and ended[0].failure.error == "InvalidRequest"
        await client.create(f"{root}ns/after", obj("after"))
        (frame,) = await event_frames(frames, 1)
        assert list(frame.ids) == [7] and frame.event.object.name == "after"
    finally:
        call.close()


async def test_a_watch_older_than_the_cache_is_expired_and_storage_replays_it(
    storage: tuple[str, GrpcStorage],
) -> None:
    kind, client = storage
    root = f"/streamed{uuid.uuid4().hex[:8]}/"
    first = await client.create(f"{root}ns/a", obj("a"))
    changed = await client.update(
        f"{root}ns/a", obj("a", team="b"), expected_resource_version=first.resource_version
    )
    # A cache starts here, after both writes: its window does not reach back to
    # first. kube's cacher answers 410 for that, though etcd still has it.
    listed = await client.list(root, ListOptions(resource_version="0"))
    call = client.watch_stream()
    frames = call.frames()
    call.open(1, root, WatchOptions(resource_version=str(first.resource_version), recursive=True))
    try:
        if kind == "cacher":
            async with asyncio.timeout(10):
                ended: list[Frame] = []
                while not ended:
                    ended = [f for f in await anext(frames) if f.ended]
            assert list(ended[0].ids) == [1] and ended[0].failure.error == "Expired"
            assert ended[0].failure.message == (
                f"too old resource version: {first.resource_version} ({listed.resource_version})"
            )
        else:
            (frame,) = await event_frames(frames, 1)
            assert list(frame.ids) == [1]
            assert frame.event.type == storage_pb2.WatchEvent.MODIFIED
            assert frame.event.resource_version == changed.resource_version
    finally:
        call.close()
