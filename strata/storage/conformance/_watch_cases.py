"""Conformance cases for watch: ordering and exactly-once delivery, the initial
state (from "0", watch-list and its initial-events-end bookmark), progress
bookmarks, predicates, expiry (compaction, a watch cache's window) and bad
input. One of the areas `_cases.py` gathers into CASES; split out so each area
reads on its own, with the helpers only watch cases use beside them."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncGenerator
from functools import partial

import orjson

from strata.storage._errors import Expired, InvalidRequest
from strata.storage._interface import ListOptions, Predicate, WatchOptions
from strata.storage.conformance._registry import Cases
from strata.storage.conformance._steps import followed_into_and_out_of
from strata.storage.conformance._suite import (
    Event,
    Suite,
    data,
    events,
    eventually,
    obj,
    quiet,
    raises,
)

CASES = Cases()
case = CASES.case


@case
async def watch_from_a_revision_sees_every_later_change_once_in_order(suite: Suite) -> None:
    root = await suite.resource()
    start = await suite.storage.create(f"{root}ns/before", obj("before"))
    stream = suite.storage.watch(root, WatchOptions(resource_version=str(start.resource_version)))
    a = await suite.storage.create(f"{root}ns/a", obj("a", v="1"))
    b = await suite.storage.update(
        f"{root}ns/a", obj("a", v="2"), expected_resource_version=a.resource_version
    )
    c = await suite.storage.delete(f"{root}ns/a")
    seen = await events(stream, 3)
    await quiet(stream, 0.3)
    await stream.aclose()
    assert [e.type for e in seen] == [Event.ADDED, Event.MODIFIED, Event.DELETED]
    assert [e.resource_version for e in seen] == [
        a.resource_version,
        b.resource_version,
        c.resource_version,
    ]


@case
async def watch_from_zero_starts_with_the_current_state(suite: Suite) -> None:
    for rv in ("0", ""):
        root = suite.prefix()
        await suite.storage.create(f"{root}ns/a", obj("a"))
        await suite.storage.create(f"{root}ns/b", obj("b"))
        stream = suite.storage.watch(root, WatchOptions(resource_version=rv))
        initial = await events(stream, 2)
        assert {(e.type, e.object.name) for e in initial} == {
            (Event.ADDED, "a"),
            (Event.ADDED, "b"),
        }
        created = await suite.storage.create(f"{root}ns/c", obj("c"))
        (live,) = await events(stream, 1)
        assert (live.type, live.resource_version) == (Event.ADDED, created.resource_version)
        await stream.aclose()


async def _initial_events(
    stream: AsyncGenerator[Event, None], within: float = 10
) -> tuple[list[Event], Event]:
    """The ADDED events of a watch-list, and the BOOKMARK that ends them."""
    added: list[Event] = []
    async with asyncio.timeout(within):
        while True:
            event = await anext(stream)
            if event.type == Event.BOOKMARK and event.initial_events_end:
                return added, event
            assert event.type == Event.ADDED, f"unexpected event before the end: {event}"
            added.append(event)


async def _watch_list(
    suite: Suite, root: str, options: WatchOptions, last: int
) -> AsyncGenerator[Event, None]:
    """A watch-list whose initial events are the objects a and b (up to revision last)."""
    stream = suite.storage.watch(root, options)
    added, end = await _initial_events(stream)
    if [e.object.name for e in added] != ["a", "b"]:  # a cache at "0" may lag
        await stream.aclose()
        raise AssertionError(f"initial events {added}")
    assert end.resource_version >= last
    return stream


@case
async def watch_list_sends_the_state_then_an_initial_events_end_bookmark(suite: Suite) -> None:
    for rv in ("", "0"):
        root = suite.prefix()
        await suite.storage.create(f"{root}ns/a", obj("a"))
        b = await suite.storage.create(f"{root}ns/b", obj("b"))
        options = WatchOptions(resource_version=rv, send_initial_events=True, progress_notify=True)
        # At "0" a cache may answer before it has seen b: it is asked again.
        stream = await eventually(partial(_watch_list, suite, root, options, b.resource_version))
        created = await suite.storage.create(f"{root}ns/c", obj("c"))
        (live,) = await events(stream, 1)
        assert (live.type, live.resource_version) == (Event.ADDED, created.resource_version)
        await stream.aclose()


@case
async def watch_list_with_a_predicate_sends_only_matching_objects(suite: Suite) -> None:
    root = suite.prefix()
    await suite.storage.create(f"{root}ns/a", obj("a", labels={"app": "x"}))
    await suite.storage.create(f"{root}ns/b", obj("b", labels={"app": "y"}))
    stream = suite.storage.watch(
        root,
        WatchOptions(
            send_initial_events=True,
            progress_notify=True,
            predicate=Predicate(label_selector="app=x"),
        ),
    )
    added, _ = await _initial_events(stream)
    await stream.aclose()
    assert [e.object.name for e in added] == ["a"]


@case
async def watch_list_not_older_than_a_revision_starts_at_or_after_it(suite: Suite) -> None:
    root = suite.prefix()
    first = await suite.storage.create(f"{root}ns/a", obj("a"))
    later = await suite.storage.update(
        f"{root}ns/a", obj("a", v="2"), expected_resource_version=first.resource_version
    )
    stream = suite.storage.watch(
        root,
        WatchOptions(
            resource_version=str(later.resource_version),
            send_initial_events=True,
            progress_notify=True,
        ),
    )
    added, end = await _initial_events(stream)
    await stream.aclose()
    assert [(e.object.name, data(e.object)) for e in added] == [("a", {"v": "2"})]
    assert end.resource_version >= later.resource_version


@case
async def watch_list_without_bookmarks_has_no_initial_events_end(suite: Suite) -> None:
    # kube ends a watch-list's state with its BOOKMARK only when bookmarks are allowed.
    root = suite.prefix()
    await suite.storage.create(f"{root}ns/a", obj("a"))
    await suite.storage.list(root, ListOptions())  # a cache is current from here
    stream = suite.storage.watch(root, WatchOptions(resource_version="", send_initial_events=True))
    (initial,) = await events(stream, 1)
    created = await suite.storage.create(f"{root}ns/c", obj("c"))
    got: list[Event] = []
    async with asyncio.timeout(10):
        while not got or got[-1].resource_version != created.resource_version:
            got.append(await anext(stream))
    await stream.aclose()
    assert (initial.type, initial.object.name) == (Event.ADDED, "a")
    assert [(e.type, e.object.name) for e in got] == [(Event.ADDED, "c")]


@case
async def watch_that_declines_initial_events_starts_now(suite: Suite) -> None:
    # sendInitialEvents=false from "" (the current revision) or "0" (any): no state.
    for rv in ("", "0"):
        root = suite.prefix()
        await suite.storage.create(f"{root}ns/a", obj("a"))
        await suite.storage.list(root, ListOptions())  # a cache is current from here
        stream = suite.storage.watch(
            root, WatchOptions(resource_version=rv, send_initial_events=False)
        )
        first = asyncio.ensure_future(anext(stream))
        # Writes until the watch (started by that first read) sees one: a's state
        # would have come before any of them.
        written: dict[int, str] = {}
        async with asyncio.timeout(10):
            while not first.done():
                name = f"b{len(written)}"
                written[
                    (await suite.storage.create(f"{root}ns/{name}", obj(name))).resource_version
                ] = name
                await asyncio.wait([first], timeout=0.1)
        event = first.result()
        await stream.aclose()
        assert event.type == Event.ADDED
        assert written.get(event.resource_version) == event.object.name


@case
async def request_progress_brings_an_idle_watch_a_bookmark_at_once(suite: Suite) -> None:
    suite.require("progress_on_request")
    root, elsewhere = suite.prefix(), suite.prefix()
    start = await suite.storage.create(f"{root}ns/a", obj("a"))
    # Its own progress would come only after a minute.
    options = WatchOptions(
        resource_version=str(start.resource_version),
        progress_notify=True,
        progress_interval_seconds=60,
    )
    stream = suite.storage.watch(root, options)
    first = asyncio.ensure_future(anext(stream))
    later = await suite.storage.create(f"{elsewhere}ns/b", obj("b"))
    async with asyncio.timeout(10):
        while not first.done():  # asked again until the watch (just starting) answers
            await suite.storage.request_progress()
            await asyncio.wait([first], timeout=0.2)
    event = first.result()
    await stream.aclose()
    assert event.type == Event.BOOKMARK
    assert event.resource_version >= later.resource_version


@case
async def watch_of_one_key_ignores_its_neighbours(suite: Suite) -> None:
    root = await suite.resource()
    start = await suite.storage.create(f"{root}ns/other", obj("other"))
    stream = suite.storage.watch(
        f"{root}ns/a", WatchOptions(resource_version=str(start.resource_version), recursive=False)
    )
    await suite.storage.create(f"{root}ns/ab", obj("ab"))
    created = await suite.storage.create(f"{root}ns/a", obj("a"))
    (event,) = await events(stream, 1)
    await quiet(stream, 0.3)
    await stream.aclose()
    assert event.object.key == f"{root}ns/a" and event.resource_version == created.resource_version


@case
async def watch_deleted_event_carries_the_last_state(suite: Suite) -> None:
    root = await suite.resource()
    created = await suite.storage.create(f"{root}ns/a", obj("a", v="last"))
    stream = suite.storage.watch(root, WatchOptions(resource_version=str(created.resource_version)))
    deleted = await suite.storage.delete(f"{root}ns/a")
    (event,) = await events(stream, 1)
    await stream.aclose()
    assert event.type == Event.DELETED and data(event.object) == {"v": "last"}
    assert event.resource_version == deleted.resource_version
    assert orjson.loads(event.object.value)["metadata"]["resourceVersion"] == str(
        deleted.resource_version
    )


@case
async def watch_with_a_predicate_follows_objects_into_and_out_of_it(suite: Suite) -> None:
    seen = await followed_into_and_out_of(
        suite,
        Predicate(label_selector="app=web"),
        obj("a", labels={"app": "db"}),
        obj("a", labels={"app": "web"}),
        obj("a", labels={"app": "web"}, k="v"),
    )
    # The DELETED event shows the last state that matched, at the revision it stopped.
    body = orjson.loads(seen[2].object.value)
    assert body["metadata"]["labels"] == {"app": "web"}
    assert body["metadata"]["resourceVersion"] == str(seen[2].resource_version)


@case
async def watch_with_a_field_selector_sees_only_that_name(suite: Suite) -> None:
    root = await suite.resource()
    start = await suite.storage.create(f"{root}ns/anchor", obj("anchor"))
    stream = suite.storage.watch(
        root,
        WatchOptions(
            resource_version=str(start.resource_version),
            predicate=Predicate(field_selector="metadata.name=b"),
        ),
    )
    await suite.storage.create(f"{root}ns/a", obj("a"))
    b = await suite.storage.create(f"{root}ns/b", obj("b"))
    (event,) = await events(stream, 1)
    await quiet(stream, 0.3)
    await stream.aclose()
    assert event.object.name == "b" and event.resource_version == b.resource_version


@case
async def watch_from_zero_with_a_predicate_starts_with_matching_objects(suite: Suite) -> None:
    root = suite.prefix()
    await suite.storage.create(f"{root}ns/a", obj("a", labels={"keep": "1"}))
    await suite.storage.create(f"{root}ns/b", obj("b"))
    stream = suite.storage.watch(
        root, WatchOptions(resource_version="0", predicate=Predicate(label_selector="keep"))
    )
    (first,) = await events(stream, 1)
    await quiet(stream, 0.3)
    await stream.aclose()
    assert (first.type, first.object.name) == (Event.ADDED, "a")


@case
async def watch_from_a_compacted_revision_is_expired(suite: Suite) -> None:
    suite.require("watch_expires_on_compaction")
    root = suite.prefix()
    old = await suite.storage.create(f"{root}ns/a", obj("a"))
    await suite.storage.update(
        f"{root}ns/a", obj("a", v="2"), expected_resource_version=old.resource_version
    )
    await suite.hooks.compact(await suite.hooks.current_revision())
    stream = suite.storage.watch(root, WatchOptions(resource_version=str(old.resource_version - 1)))
    await raises(Expired, events(stream, 1))


async def _too_old(suite: Suite, root: str, since: int) -> int:
    """The OLDEST of the Expired "too old resource version: since (OLDEST)" that
    a watch from since ends with."""
    stream = suite.storage.watch(root, WatchOptions(resource_version=str(since)))
    error = await raises(Expired, events(stream, 1))
    assert isinstance(error, Expired)
    named = re.fullmatch(rf"too old resource version: {since} \((\d+)\)", error.message)
    assert named is not None, error.message
    return int(named[1])


@case
async def watch_from_before_the_window_is_expired_though_storage_has_it(suite: Suite) -> None:
    # kube's cacher: 410 "too old resource version: N (OLDEST)" for a watch from
    # before its window, whatever etcd still keeps; from OLDEST on it is served.
    suite.require("expires_before_window")
    root = await suite.resource()
    a = await suite.storage.create(f"{root}ns/a", obj("a"))  # revision 1 is behind us
    oldest = await _too_old(suite, root, 1)
    assert 1 < oldest <= await suite.hooks.current_revision()
    assert await _too_old(suite, root, oldest - 1) == oldest
    stream = suite.storage.watch(root, WatchOptions(resource_version=str(oldest)))
    b = await suite.storage.create(f"{root}ns/b", obj("b"))
    wanted = [o.resource_version for o in (a, b) if o.resource_version > oldest]
    seen = await events(stream, len(wanted))
    await stream.aclose()
    assert [e.resource_version for e in seen] == wanted


@case
async def watch_from_a_revision_not_reached_yet_waits_for_it(suite: Suite) -> None:
    # kube: a watch from a future resourceVersion is accepted and sees what
    # comes after it (only a watch-list answers "Too large resource version").
    root = await suite.resource()
    future = await suite.hooks.current_revision() + 2
    stream = suite.storage.watch(root, WatchOptions(resource_version=str(future)))
    first = asyncio.ensure_future(anext(stream))
    written = [
        (await suite.storage.create(f"{root}ns/o{i}", obj(f"o{i}"))).resource_version
        for i in range(3)
    ]
    assert written[-1] > future
    (event,) = await events(_starting_with(first, stream), 1)
    await stream.aclose()
    assert event.resource_version == min(r for r in written if r > future)


async def _starting_with(
    first: asyncio.Future[Event], rest: AsyncGenerator[Event, None]
) -> AsyncGenerator[Event, None]:
    yield await first
    async for event in rest:
        yield event


@case
async def watch_with_a_malformed_revision_is_invalid_request(suite: Suite) -> None:
    stream = suite.storage.watch(suite.prefix(), WatchOptions(resource_version="soon"))
    await raises(InvalidRequest, events(stream, 1))
    stream = suite.storage.watch(
        suite.prefix(), WatchOptions(predicate=Predicate(label_selector="==="))
    )
    await raises(InvalidRequest, events(stream, 1))


@case
async def watch_order_holds_under_concurrent_writers(suite: Suite) -> None:
    root = await suite.resource()
    start = await suite.hooks.current_revision()
    stream = suite.storage.watch(root, WatchOptions(resource_version=str(start)))
    writers, per_writer = 8, 10

    async def writer(w: int) -> list[int]:
        revisions = []
        for i in range(per_writer):
            created = await suite.storage.create(f"{root}ns/w{w}-{i}", obj(f"w{w}-{i}"))
            revisions.append(created.resource_version)
        return revisions

    written = sorted(
        r for rs in await asyncio.gather(*(writer(w) for w in range(writers))) for r in rs
    )
    seen = await events(stream, writers * per_writer, within=30)
    await quiet(stream, 0.3)
    await stream.aclose()
    assert [e.resource_version for e in seen] == written


@case
async def two_watchers_see_the_same_events(suite: Suite) -> None:
    root = await suite.resource()
    start = await suite.storage.create(f"{root}ns/anchor", obj("anchor"))
    options = WatchOptions(resource_version=str(start.resource_version))
    first, second = suite.storage.watch(root, options), suite.storage.watch(root, options)
    for i in range(5):
        await suite.storage.create(f"{root}ns/o{i}", obj(f"o{i}"))
    a, b = await events(first, 5), await events(second, 5)
    await first.aclose()
    await second.aclose()
    assert [(e.type, e.resource_version) for e in a] == [(e.type, e.resource_version) for e in b]


@case
async def watch_sees_a_ttl_expiry_as_deleted(suite: Suite) -> None:
    root = await suite.resource()
    start = await suite.storage.create(f"{root}ns/anchor", obj("anchor"))
    stream = suite.storage.watch(root, WatchOptions(resource_version=str(start.resource_version)))
    await suite.storage.create(f"{root}ns/short", obj("short"), ttl_seconds=1)
    added, deleted = await events(stream, 2, within=15)
    await stream.aclose()
    assert (added.type, deleted.type) == (Event.ADDED, Event.DELETED)
    assert deleted.object.name == "short"


@case
async def watch_with_progress_notify_sends_bookmarks_while_idle(suite: Suite) -> None:
    suite.require("progress_notify")
    root = suite.prefix()
    created = await suite.storage.create(f"{root}ns/a", obj("a"))
    stream = suite.storage.watch(
        root,
        WatchOptions(resource_version=str(created.resource_version), progress_notify=True),
    )
    try:
        async with asyncio.timeout(15):
            while (event := await anext(stream)).type != Event.BOOKMARK:
                raise AssertionError(f"unexpected event {event}")
    finally:
        await stream.aclose()
    assert event.resource_version >= created.resource_version
    assert not event.HasField("object") or event.object.value == b""
