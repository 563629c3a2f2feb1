"""strata.client's informer parts without a server: the Indexer and listers,
the DeltaFIFO's delta rules, and the work queue's dedup and backoff."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

from strata.client import (
    DeletedFinalStateUnknown,
    Delta,
    DeltaFIFO,
    DeltaType,
    Indexer,
    ItemExponentialFailureRateLimiter,
    Lister,
    NotFound,
    RateLimitingQueue,
    Reflector,
    Resource,
    ShutDown,
    WatchEvent,
    WorkQueue,
    api_error,
)

Obj = dict[str, Any]


def pod(name: str, namespace: str = "a", rv: str = "1", **labels: str) -> Obj:
    return {
        "metadata": {
            "name": name,
            "namespace": namespace,
            "resourceVersion": rv,
            "labels": labels,
        },
        "spec": {"nodeName": labels.get("node", "")},
    }


def by_node(obj: Obj) -> list[str]:
    node = obj["spec"].get("nodeName")
    return [node] if node else []


def test_indexes_follow_every_change() -> None:
    indexer = Indexer({"node": by_node})
    indexer.add(pod("p1", node="n1"))
    indexer.add(pod("p2", node="n1"))
    indexer.add(pod("p3", "b", node="n2"))
    assert indexer.index_keys("node", "n1") == ["a/p1", "a/p2"]
    assert indexer.list_index_func_values("node") == ["n1", "n2"]
    assert [o["metadata"]["name"] for o in indexer.by_index("namespace", "b")] == ["p3"]
    indexer.update(pod("p2", node="n2", rv="2"))
    assert indexer.index_keys("node", "n1") == ["a/p1"]
    assert indexer.index_keys("node", "n2") == ["a/p2", "b/p3"]
    indexer.delete(pod("p1"))
    assert indexer.list_index_func_values("node") == ["n2"]
    indexer.replace([pod("q", node="n3")], "9")
    assert indexer.list_keys() == ["a/q"] and indexer.resource_version == "9"
    assert indexer.index_keys("node", "n2") == []
    # An index added later covers what is already there.
    indexer.add_indexers({"name": lambda o: [o["metadata"]["name"]]})
    assert indexer.index_keys("name", "q") == ["a/q"]
    with pytest.raises(KeyError):
        indexer.by_index("missing", "x")
    with pytest.raises(ValueError, match="already exists"):
        indexer.add_indexers({"node": by_node})


def test_listers_select_by_labels_and_namespace() -> None:
    indexer = Indexer()
    for obj in (pod("web", app="web"), pod("db", app="db"), pod("web", "b", app="web")):
        indexer.add(obj)
    lister = Lister(indexer, "pods")
    assert sorted(o["metadata"]["namespace"] for o in lister.list("app=web")) == ["a", "b"]
    assert [o["metadata"]["name"] for o in lister.namespaced("a").list("app in (db)")] == ["db"]
    assert lister.namespaced("b").get("web")["metadata"]["namespace"] == "b"
    with pytest.raises(NotFound) as missing:
        lister.namespaced("b").get("db")
    assert missing.value.message == 'pods "db" not found'


async def test_delta_fifo_queues_keys_in_order_with_their_deltas() -> None:
    fifo = DeltaFIFO()
    fifo.add(pod("x"))
    fifo.add(pod("y"))
    fifo.update(pod("x", rv="2"))
    fifo.delete(pod("x", rv="3"))
    fifo.delete(pod("x", rv="3"))  # a second deletion collapses into the first
    popped: list[tuple[str, list[DeltaType]]] = []

    async def process(deltas: list[Delta]) -> None:
        obj = deltas[0].object
        assert isinstance(obj, dict)
        popped.append((obj["metadata"]["name"], [d.type for d in deltas]))

    await fifo.pop(process)
    await fifo.pop(process)
    assert popped == [
        ("x", [DeltaType.ADDED, DeltaType.UPDATED, DeltaType.DELETED]),
        ("y", [DeltaType.ADDED]),
    ]


async def test_a_relist_replaces_and_reports_what_vanished() -> None:
    known = Indexer()
    known.add(pod("kept"))
    known.add(pod("gone"))
    fifo = DeltaFIFO(known)
    assert not fifo.has_synced()
    fifo.replace([pod("kept", rv="5"), pod("new", rv="5")])
    deltas: list[Delta] = []

    async def process(batch: list[Delta]) -> None:
        deltas.extend(batch)

    for _ in range(3):
        await fifo.pop(process)
    assert fifo.has_synced()
    assert [d.type for d in deltas] == [DeltaType.REPLACED, DeltaType.REPLACED, DeltaType.DELETED]
    vanished = deltas[2].object
    assert isinstance(vanished, DeletedFinalStateUnknown)
    assert vanished.key == "a/gone" and vanished.obj["metadata"]["name"] == "gone"


async def test_a_failed_process_puts_the_deltas_back() -> None:
    fifo = DeltaFIFO()
    fifo.add(pod("x"))

    async def fail(_: list[Delta]) -> None:
        fifo.update(pod("x", rv="2"))  # arrives while processing
        raise RuntimeError("handler broke")

    with pytest.raises(RuntimeError):
        await fifo.pop(fail)
    seen: list[list[DeltaType]] = []

    async def record(batch: list[Delta]) -> None:
        seen.append([d.type for d in batch])

    await fifo.pop(record)
    assert seen == [[DeltaType.ADDED, DeltaType.UPDATED]] and len(fifo) == 0


async def test_resync_sends_known_objects_with_nothing_queued() -> None:
    known = Indexer()
    known.add(pod("idle"))
    known.add(pod("busy"))
    fifo = DeltaFIFO(known)
    fifo.update(pod("busy", rv="2"))
    fifo.resync()
    kinds: list[tuple[str, DeltaType]] = []

    async def record(batch: list[Delta]) -> None:
        for d in batch:
            assert isinstance(d.object, dict)
            kinds.append((d.object["metadata"]["name"], d.type))

    await fifo.pop(record)
    await fifo.pop(record)
    assert kinds == [("busy", DeltaType.UPDATED), ("idle", DeltaType.SYNC)]


async def test_the_work_queue_dedups_and_holds_items_being_processed() -> None:
    queue = WorkQueue()
    queue.add("a")
    queue.add("b")
    queue.add("a")
    assert len(queue) == 2
    first = await queue.get()
    assert first == "a"
    queue.add("a")  # while a worker holds it: not handed out twice
    assert await queue.get() == "b"
    assert len(queue) == 0
    queue.done("a")  # now it goes back
    assert await queue.get() == "a"
    queue.done("a")
    queue.done("b")
    waiter = asyncio.create_task(queue.get())
    await asyncio.sleep(0)
    queue.shutdown()
    with pytest.raises(ShutDown):
        await waiter


async def test_rate_limited_items_wait_longer_each_failure_until_forgotten() -> None:
    limiter = ItemExponentialFailureRateLimiter(base=0.01, cap=0.04)
    assert [limiter.when("x") for _ in range(4)] == [0.01, 0.02, 0.04, 0.04]
    assert limiter.num_requeues("x") == 4
    limiter.forget("x")
    assert limiter.when("x") == 0.01

    queue = RateLimitingQueue(ItemExponentialFailureRateLimiter(base=0.05, cap=1.0))
    loop = asyncio.get_running_loop()
    queue.add_rate_limited("item")
    queue.add_rate_limited("item")  # the second wait (0.1 s) is later: the first stands
    assert len(queue) == 0
    started = loop.time()
    assert await asyncio.wait_for(queue.get(), 5) == "item"
    assert loop.time() - started >= 0.04
    assert queue.num_requeues("item") == 2
    queue.forget("item")
    assert queue.num_requeues("item") == 0
    queue.done("item")
    queue.add_after("later", 0.01)
    queue.add_after("later", 0)  # now beats later
    assert await asyncio.wait_for(queue.get(), 5) == "later"


class _FlakyLister:
    """A ListerWatcher whose first list fails as a bug would, then works."""

    resource = Resource(version="v1", resource="pods")

    def __init__(self) -> None:
        self.lists = 0

    async def list(self, namespace: str | None = None, **_: Any) -> Obj:
        self.lists += 1
        if self.lists == 1:
            raise KeyError("a bug in a page's handling")
        return {"metadata": {"resourceVersion": "5"}, "items": [pod("x", rv="5")]}

    async def watch(self, namespace: str | None = None, **_: Any) -> AsyncIterator[WatchEvent]:
        await asyncio.sleep(3600)
        yield WatchEvent("ADDED", {})  # never reached: the watch stays open


@contextlib.asynccontextmanager
async def listed(reflector: Reflector, fifo: DeltaFIFO) -> AsyncIterator[None]:
    """reflector running until its first list has reached fifo (or 2 s)."""
    task = asyncio.create_task(reflector.run())
    try:
        for _ in range(200):
            if len(fifo):
                break
            await asyncio.sleep(0.01)
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def test_a_reflector_outlives_an_unexpected_error() -> None:
    fifo, lister = DeltaFIFO(), _FlakyLister()
    reflector = Reflector(lister, fifo, namespace="a", max_backoff=0.01)
    async with listed(reflector, fifo):
        assert lister.lists == 2 and len(fifo) == 1
        assert reflector.last_sync_resource_version == "5"


async def test_an_empty_first_list_is_synced_at_once() -> None:
    fifo = DeltaFIFO(Indexer())
    fifo.replace([])
    assert fifo.has_synced() and fifo.synced.is_set()


class _NoWatchList(_FlakyLister):
    """A server that refuses sendInitialEvents (as one older than kube 1.27 does)."""

    def __init__(self) -> None:
        super().__init__()
        self.lists = 1  # its lists work
        self.refused = 0

    async def watch(
        self, namespace: str | None = None, **options: Any
    ) -> AsyncIterator[WatchEvent]:
        if options.get("send_initial_events"):
            self.refused += 1
            raise api_error(400, b'{"kind": "Status", "code": 400, "reason": "BadRequest"}')
        async for event in super().watch(namespace, **options):
            yield event


async def test_watch_list_falls_back_to_a_list() -> None:
    fifo, lister = DeltaFIFO(), _NoWatchList()
    reflector = Reflector(lister, fifo, namespace="a", use_watch_list=True)
    async with listed(reflector, fifo):
        assert lister.refused == 1 and lister.lists == 2 and len(fifo) == 1
        assert not reflector.use_watch_list  # not asked again


class _EndsAtOnce(_FlakyLister):
    """A server whose every watch ends at once and empty (its storage away)."""

    def __init__(self) -> None:
        super().__init__()
        self.lists = 1
        self.watched = 0

    async def watch(self, namespace: str | None = None, **_: Any) -> AsyncIterator[WatchEvent]:
        self.watched += 1
        return
        yield WatchEvent("ADDED", {})  # an async generator that yields nothing


async def test_a_very_short_watch_waits_a_backoff() -> None:
    """client-go's rule: a watch that ended within a second with no event is a
    failure, so the reflector backs off instead of watching again at once."""
    fifo, lister = DeltaFIFO(), _EndsAtOnce()
    reflector = Reflector(lister, fifo, namespace="a", max_backoff=0.2)
    task = asyncio.create_task(reflector.run())
    await asyncio.sleep(1.0)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    # Without the rule it would watch thousands of times a second; with it each
    # watch waits up to 0.2 s (jittered from 0).
    assert 2 <= lister.watched <= 200, lister.watched
