"""The watch cache's own behaviour, beyond the storage contract it shares with
the storage service (tests/conformance): its window, bookmarks, slow watchers,
reflector recovery and reads from the cache, each on a real etcd behind a real
storage service."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncGenerator, AsyncIterator

import grpc
import orjson
import pytest

from services.cacher import metrics
from services.cacher.cache import WatchCache
from services.cacher.storage import CachedStorage
from services.storage.store import EtcdStorage
from strata.etcd import Etcd
from strata.proto.storage.v1 import storage_pb2
from strata.storage import (
    Expired,
    GrpcStorage,
    ListOptions,
    ListResult,
    Predicate,
    StorageServicer,
    WatchOptions,
    add_to_server,
    watch_stream,
)
from strata.storage.requests import compile_predicate
from tests.support import hops

Event = storage_pb2.WatchEvent
EVERYTHING = compile_predicate("/", Predicate())


def resource() -> str:
    """A resource prefix of its own, so tests sharing one etcd never meet."""
    return f"/things{uuid.uuid4().hex[:8]}/"


def obj(name: str, **data: str) -> bytes:
    return orjson.dumps(
        {
            "apiVersion": "v1",
            "kind": "Thing",
            "metadata": {"name": name, "namespace": "ns"},
            "data": data,
        }
    )


async def decoded(stream: AsyncGenerator[bytes, None]) -> AsyncGenerator[Event, None]:
    async for data in stream:
        yield Event.FromString(data)


async def next_events(events: AsyncIterator[Event], count: int, within: float = 10) -> list[Event]:
    """The next count events, bookmarks excluded."""
    got: list[Event] = []
    async with asyncio.timeout(within):
        while len(got) < count:
            event = await anext(events)
            if event.type != Event.BOOKMARK:
                got.append(event)
    return got


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def upstream(storage_address: str) -> AsyncIterator[GrpcStorage]:
    channel = hops.dial(storage_address)
    yield GrpcStorage(channel)
    await channel.close()


async def registered(cache: WatchCache, count: int) -> None:
    async with asyncio.timeout(10):
        while cache.watcher_count() < count:  # noqa: ASYNC110 - a count nothing signals
            await asyncio.sleep(0.01)


async def started(cache: WatchCache) -> WatchCache:
    cache.start()
    await cache.wait_synced()
    return cache


async def test_replay_from_a_revision_is_exactly_once_in_order_under_concurrent_writers(
    upstream: GrpcStorage,
) -> None:
    root = resource()
    cache = await started(WatchCache(upstream, root))
    start = (await upstream.create(f"{root}ns/start", obj("start"))).resource_version

    async def writer(w: int) -> list[int]:
        revisions = []
        current = await upstream.create(f"{root}ns/w{w}", obj(f"w{w}", n="0"))
        revisions.append(current.resource_version)
        for n in range(1, 10):
            current = await upstream.update(
                f"{root}ns/w{w}",
                obj(f"w{w}", n=str(n)),
                expected_resource_version=current.resource_version,
            )
            revisions.append(current.resource_version)
        return revisions

    written = sorted(r for rs in await asyncio.gather(*(writer(w) for w in range(8))) for r in rs)
    await cache.wait_for_revision(written[-1])
    replay = decoded(cache.watch(root, start, WatchOptions(), EVERYTHING))
    seen = await next_events(replay, len(written))
    assert [e.resource_version for e in seen] == written
    await replay.aclose()
    await cache.stop()


async def test_a_revision_older_than_the_window_is_expired(upstream: GrpcStorage) -> None:
    root = resource()
    cache = await started(WatchCache(upstream, root, window_lower=3, window_upper=3))
    revisions = [
        (await upstream.create(f"{root}ns/o{i}", obj(f"o{i}"))).resource_version for i in range(6)
    ]
    await cache.wait_for_revision(revisions[-1])
    replay = decoded(cache.watch(root, revisions[2], WatchOptions(), EVERYTHING))
    assert [e.resource_version for e in await next_events(replay, 3)] == revisions[3:]
    await replay.aclose()
    too_old = decoded(cache.watch(root, revisions[1], WatchOptions(), EVERYTHING))
    with pytest.raises(Expired, match=f"too old resource version: {revisions[1]}"):
        await anext(too_old)
    await cache.stop()


async def test_bookmarks_come_every_period_and_before_the_watch_times_out(
    upstream: GrpcStorage,
) -> None:
    root = resource()
    clock = Clock()
    cache = await started(
        WatchCache(upstream, root, clock=clock, bookmark_frequency=60, bookmark_ticker=False)
    )
    created = await upstream.create(f"{root}ns/a", obj("a"))
    await cache.wait_for_revision(created.resource_version)
    since = str(created.resource_version)
    periodic = cache.watch(
        root,
        created.resource_version,
        WatchOptions(resource_version=since, progress_notify=True),
        EVERYTHING,
    )
    timed = cache.watch(
        root,
        created.resource_version,
        WatchOptions(resource_version=since, progress_notify=True, timeout_seconds=30),
        EVERYTHING,
    )
    silent = cache.watch(
        root, created.resource_version, WatchOptions(resource_version=since), EVERYTHING
    )
    first = [asyncio.ensure_future(anext(s)) for s in (periodic, timed, silent)]
    await registered(cache, 3)
    clock.now = 27.9
    assert cache.send_due_bookmarks() == 0
    clock.now = 28.0  # 2s before the 30s timeout
    assert cache.send_due_bookmarks() == 1
    timed_bookmark = Event.FromString(await first[1])
    assert timed_bookmark.type == Event.BOOKMARK
    assert timed_bookmark.resource_version >= created.resource_version
    clock.now = 60.0
    assert cache.send_due_bookmarks() == 1  # the periodic one; the timed one is past its last
    assert Event.FromString(await first[0]).type == Event.BOOKMARK
    clock.now = 120.0
    assert cache.send_due_bookmarks() == 1
    assert Event.FromString(await anext(periodic)).type == Event.BOOKMARK
    assert not first[2].done()  # never asked for bookmarks
    first[2].cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await first[2]
    for stream in (periodic, timed, silent):
        await stream.aclose()
    await cache.stop()


async def test_a_slow_watcher_is_closed_while_a_hundred_fast_ones_get_everything(
    upstream: GrpcStorage,
) -> None:
    root = resource()
    cache = await started(WatchCache(upstream, root, watcher_buffer=5, watcher_budget_seconds=0.2))
    start = (await upstream.create(f"{root}ns/start", obj("start"))).resource_version

    def terminated() -> float:
        value = metrics.REGISTRY.get_sample_value(
            "apiserver_terminated_watchers_total", {"resource": root.strip("/")}
        )
        return value or 0.0

    before = terminated()
    count = 30

    async def fast() -> list[int]:
        stream = decoded(cache.watch(root, start, WatchOptions(), EVERYTHING))
        seen = [e.resource_version for e in await next_events(stream, count, within=30)]
        await stream.aclose()
        return seen

    slow = cache.watch(root, start, WatchOptions(), EVERYTHING)
    slow_first = asyncio.ensure_future(anext(slow))  # registers, then never reads again
    readers = [asyncio.ensure_future(fast()) for _ in range(100)]
    await registered(cache, 101)
    written = []
    for i in range(count):
        written.append((await upstream.create(f"{root}ns/o{i}", obj(f"o{i}"))).resource_version)
    results = await asyncio.gather(*readers)
    assert all(seen == written for seen in results)
    assert Event.FromString(await slow_first).resource_version == written[0]
    await asyncio.sleep(0.3)  # past the slow watcher's budget
    rest = [data async for data in slow]  # the stream ends: the watcher was closed
    assert len(rest) < count - 1
    assert terminated() == before + 1
    await cache.stop()


async def test_a_read_waiting_for_an_idle_cache_asks_for_progress_at_once(
    upstream: GrpcStorage,
) -> None:
    root = resource()
    # Left to its own progress, this cache would learn of newer revisions each minute.
    cache = await started(WatchCache(upstream, root, progress_interval=60))
    await upstream.create(f"{resource()}ns/elsewhere", obj("elsewhere"))
    current = await upstream.current_revision()
    assert cache.revision < current
    async with asyncio.timeout(2):  # well before wait_for_revision would give up (3s)
        await cache.wait_for_revision(current)
    assert cache.revision >= current
    await cache.stop()


class Sink:
    """A watch stream's sink as the cacher sees it: records what it is given and
    refuses live events once told to (its stream's reader fell behind)."""

    def __init__(self) -> None:
        self.initial_events: list[bytes] = []
        self.live: list[bytes] = []
        self.refusing = False

    def initial(self, data: bytes) -> None:
        self.initial_events.append(data)

    def send(self, data: bytes) -> bool:
        self.live.append(data)
        return not self.refusing


async def test_a_watcher_whose_sink_falls_behind_is_terminated_and_the_others_go_on(
    upstream: GrpcStorage,
) -> None:
    root = resource()
    cache = await started(WatchCache(upstream, root))
    await upstream.create(f"{root}ns/before", obj("before"))
    await cache.wait_for_revision(await upstream.current_revision())
    before = metrics.REGISTRY.get_sample_value(
        "apiserver_terminated_watchers_total", {"resource": root.strip("/")}
    )
    behind, keeping_up = Sink(), Sink()
    watches = [
        asyncio.ensure_future(
            cache.watch_into(root, 0, WatchOptions(recursive=True), EVERYTHING, s)
        )
        for s in (behind, keeping_up)
    ]
    await registered(cache, 2)
    # Watching from "0": the current state arrives as initial events, not live ones.
    assert [Event.FromString(d).object.name for d in behind.initial_events] == ["before"]
    behind.refusing = True
    written = [
        (await upstream.create(f"{root}ns/o{i}", obj(f"o{i}"))).resource_version for i in range(3)
    ]
    async with asyncio.timeout(10):
        await watches[0]  # ended at the first event its sink refused
    assert len(behind.live) == 1
    after = metrics.REGISTRY.get_sample_value(
        "apiserver_terminated_watchers_total", {"resource": root.strip("/")}
    )
    assert (after or 0.0) == (before or 0.0) + 1
    await cache.wait_for_revision(written[-1])
    assert [Event.FromString(d).resource_version for d in keeping_up.live] == written
    assert not watches[1].done()
    await cache.stop()
    async with asyncio.timeout(10):
        await watches[1]  # a stopped cache closes its watchers: the watch returns


def watch_ids(put_for: int | tuple[int, ...]) -> tuple[int, ...]:
    """The watches an outbox entry was put for, in order of id."""
    return tuple(sorted(put_for)) if isinstance(put_for, tuple) else (put_for,)


async def test_a_streams_watchers_get_an_event_in_one_put_and_end_together_when_behind(
    upstream: GrpcStorage, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = resource()
    cache = await started(WatchCache(upstream, root))
    monkeypatch.setattr(watch_stream, "BEHIND_PER_WATCH", 1)
    behind, keeping_up = watch_stream.Outbox(), watch_stream.Outbox()
    behind.watches, keeping_up.watches = 2, 3
    before = metrics.REGISTRY.get_sample_value(
        "apiserver_terminated_watchers_total", {"resource": root.strip("/")}
    )
    labelled = compile_predicate(root, Predicate(label_selector="pick=yes"))
    options = WatchOptions(recursive=True)
    watches = [
        asyncio.ensure_future(cache.watch_into(root, 0, options, matches, sink))
        for matches, sink in (
            (EVERYTHING, watch_stream.WatchSink(behind, 1)),
            (EVERYTHING, watch_stream.WatchSink(behind, 2)),
            (EVERYTHING, watch_stream.WatchSink(keeping_up, 1)),
            (EVERYTHING, watch_stream.WatchSink(keeping_up, 2)),
            (labelled, watch_stream.WatchSink(keeping_up, 3)),
        )
    ]
    await registered(cache, 5)
    picked = orjson.dumps(
        {"metadata": {"name": "picked", "namespace": "ns", "labels": {"pick": "yes"}}}
    )
    first = await upstream.create(f"{root}ns/first", obj("first"))
    await cache.wait_for_revision(first.resource_version)
    # One put for the two watches without selectors; none for the labelled one.
    assert [watch_ids(ids) for ids, _ in keeping_up.take()] == [(1, 2)]
    second = await upstream.create(f"{root}ns/picked", picked)
    await cache.wait_for_revision(second.resource_version)
    # The stream nobody read holds two events for each of its two watches,
    # past their allowance of one: both end, and the other stream goes on.
    async with asyncio.timeout(10):
        await asyncio.gather(*watches[:2])
    after = metrics.REGISTRY.get_sample_value(
        "apiserver_terminated_watchers_total", {"resource": root.strip("/")}
    )
    assert (after or 0.0) == (before or 0.0) + 2
    assert cache.watcher_count() == 3
    taken = keeping_up.take()
    assert sorted(watch_ids(ids) for ids, _ in taken) == [(1, 2), (3,)]
    names = [Event.FromString(data).object.name for _, data in taken if isinstance(data, bytes)]
    assert names == ["picked", "picked"]
    assert not any(watch.done() for watch in watches[2:])
    await cache.stop()
    async with asyncio.timeout(10):
        await asyncio.gather(*watches[2:])


async def test_the_reflector_resumes_after_the_storage_service_restarts(
    etcd: Etcd, upstream: GrpcStorage
) -> None:
    root = resource()
    storage = EtcdStorage(etcd, prefix="/strata-test", progress_interval_seconds=0.2)
    server = grpc.aio.server()
    add_to_server(StorageServicer(storage), server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
    cache = await started(WatchCache(GrpcStorage(channel), root))
    start = (await upstream.create(f"{root}ns/start", obj("start"))).resource_version
    watcher = decoded(cache.watch(root, start, WatchOptions(), EVERYTHING))
    written = [
        (await upstream.create(f"{root}ns/a{i}", obj(f"a{i}"))).resource_version for i in range(3)
    ]
    assert [e.resource_version for e in await next_events(watcher, 3)] == written
    await server.stop(grace=None)  # the reflector's watch breaks mid-stream
    written += [
        (await upstream.create(f"{root}ns/b{i}", obj(f"b{i}"))).resource_version for i in range(3)
    ]
    server = grpc.aio.server()
    add_to_server(StorageServicer(storage), server)
    assert server.add_insecure_port(f"127.0.0.1:{port}") == port
    await server.start()
    written += [
        (await upstream.create(f"{root}ns/c{i}", obj(f"c{i}"))).resource_version for i in range(3)
    ]
    seen = await next_events(watcher, 6, within=20)
    assert [e.resource_version for e in seen] == written[3:]
    await watcher.aclose()
    await cache.stop()
    await channel.close()
    await server.stop(grace=None)


class CountingStorage(GrpcStorage):
    """The storage service's client, counting the lists that reach it."""

    lists = 0

    async def list(self, prefix: str, opts: ListOptions = ListOptions()) -> ListResult:
        self.lists += 1
        return await super().list(prefix, opts)


async def test_a_consistent_list_from_the_cache_sees_a_write_made_just_before(
    storage_address: str,
) -> None:
    channel = hops.dial(storage_address)
    counting = CountingStorage(channel)
    cached = CachedStorage(counting)
    root = resource()
    await cached.list(root)  # starts and syncs the cache (its one list from storage)
    lists_after_sync = counting.lists
    for i in range(5):
        created = await cached.create(f"{root}ns/o{i}", obj(f"o{i}"))
        listed = await cached.list(root)
        assert listed.items[-1].resource_version == created.resource_version
        assert listed.resource_version >= created.resource_version
    assert counting.lists == lists_after_sync  # every consistent list came from the cache
    await cached.stop()
    await channel.close()


async def test_what_lists_and_initial_states_send_follows_every_change(
    upstream: GrpcStorage,
) -> None:
    root = resource()
    cache = await started(WatchCache(upstream, root))
    o1 = await upstream.create(f"{root}ns/o1", obj("o1", n="1"))
    o2 = await upstream.create(f"{root}ns/o2", obj("o2"))
    await cache.wait_for_revision(o2.resource_version)

    def listed() -> ListResult:
        result = cache.read_list(root, EVERYTHING)
        assert result.encoded == [item.SerializeToString() for item in result.items]
        return result

    assert [o.resource_version for o in listed().items] == [
        o1.resource_version,
        o2.resource_version,
    ]
    # The copies kept for that list must not outlive the objects they copy.
    o1 = await upstream.update(
        f"{root}ns/o1", obj("o1", n="2"), expected_resource_version=o1.resource_version
    )
    await upstream.delete(f"{root}ns/o2")
    o3 = await upstream.create(f"{root}ns/o3", obj("o3"))
    await cache.wait_for_revision(o3.resource_version)

    def state(o: storage_pb2.Object) -> tuple[str, int, object]:
        return o.key, o.resource_version, orjson.loads(o.value)

    assert [state(o) for o in listed().items] == [state(o1), state(o3)]
    initial = decoded(cache.watch(root, 0, WatchOptions(), EVERYTHING))
    events = await next_events(initial, 2)
    assert [(e.type, state(e.object), e.resource_version) for e in events] == [
        (Event.ADDED, state(o1), o1.resource_version),
        (Event.ADDED, state(o3), o3.resource_version),
    ]
    await initial.aclose()
    await cache.stop()
