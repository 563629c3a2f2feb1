"""How Storage/WatchStream groups watches' items into frames (one frame per
shared event object, never reordering any one watch's items), and how it ends
the watches of a stream whose reader falls behind."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from strata import protowire
from strata.proto.storage.v1 import storage_pb2
from strata.storage.watch_stream import (
    BEHIND_PER_WATCH,
    Entry,
    Item,
    Outbox,
    WatchSink,
    frames,
    serve_watch_stream,
)


def described(message: bytes) -> list[tuple[list[int], bytes | str]]:
    """A WatchFrames message as (ids, event value or how the watch ended) per frame."""
    out: list[tuple[list[int], bytes | str]] = []
    for frame in storage_pb2.WatchFrames.FromString(message).frames:
        if frame.HasField("event"):
            out.append((list(frame.ids), frame.event.object.value))
        else:
            out.append(
                (list(frame.ids), frame.failure.error if frame.HasField("failure") else "end")
            )
    return out


def parsed(encoded: list[bytes]) -> list[tuple[list[int], bytes | str]]:
    return described(protowire.repeated(encoded))


def event(value: bytes) -> bytes:
    return storage_pb2.WatchEvent(
        type=storage_pb2.WatchEvent.MODIFIED, object=storage_pb2.Object(value=value)
    ).SerializeToString()


def test_one_frame_per_shared_event() -> None:
    a, b = event(b"a"), event(b"b")
    items: list[tuple[int, Item]] = [(1, a), (1, b), (2, a), (2, b), (3, a), (3, b)]
    assert parsed(frames(items)) == [([1, 2, 3], b"a"), ([1, 2, 3], b"b")]


def test_one_event_for_many_watches_is_one_frame() -> None:
    a = event(b"a")
    items: list[tuple[int, Item]] = [(watch, a) for watch in (7, 3, 1000, 5)]
    assert parsed(frames(items)) == [([7, 3, 1000, 5], b"a")]


def test_an_event_put_for_many_watches_at_once_is_one_frame() -> None:
    a = event(b"a")
    assert parsed(frames([((7, 3, 1000), a)])) == [([7, 3, 1000], b"a")]


def test_events_put_for_many_watches_keep_each_watchs_order() -> None:
    a, b, c = event(b"a"), event(b"b"), event(b"c")
    entries: list[Entry] = [((1, 2), a), (3, b), ((1, 2, 3), c), (2, b)]
    assert parsed(frames(entries)) == [
        ([1, 2], b"a"),
        ([3], b"b"),
        ([1, 2, 3], b"c"),
        ([2], b"b"),
    ]


def test_one_object_a_watch_got_twice_is_two_frames() -> None:
    # The same object twice for watch 1 (an end, say, is one shared object):
    # one frame would say it once.
    items: list[tuple[int, Item]] = [(1, b""), (2, b""), (1, b"")]
    assert parsed(frames(items)) == [([1, 2], "end"), ([1], "end")]


def test_equal_bytes_that_are_not_the_same_object_go_apart() -> None:
    # Only the very same object is known to be one event encoded once.
    first, second = event(b"a"), event(b"a")
    assert first == second and first is not second
    assert parsed(frames([(1, first), (2, second)])) == [([1], b"a"), ([2], b"a")]


def test_a_watch_never_sees_its_items_reordered() -> None:
    a, b = event(b"a"), event(b"b")
    # Watch 2 yielded b before a: it cannot join a's first frame after its b.
    items: list[tuple[int, Item]] = [(1, a), (1, b), (2, b), (2, a)]
    assert parsed(frames(items)) == [([1], b"a"), ([1, 2], b"b"), ([2], b"a")]


def test_ends_and_failures() -> None:
    a = event(b"a")
    failure = storage_pb2.Failure(error="Expired", message="too old")
    items: list[tuple[int, Item]] = [(1, a), (2, a), (1, b""), (2, b""), (3, failure)]
    assert parsed(frames(items)) == [([1, 2], b"a"), ([1, 2], "end"), ([3], "Expired")]


async def test_a_stream_whose_reader_falls_behind_ends_the_watches_that_send_more() -> None:
    accepted: list[bool] = []
    opened = asyncio.Event()

    async def requests() -> AsyncIterator[storage_pb2.WatchStreamRequest]:
        yield storage_pb2.WatchStreamRequest(
            open=storage_pb2.OpenWatch(id=7, watch=storage_pb2.WatchRequest(key="/a/"))
        )
        await opened.wait()

    async def watch(request: storage_pb2.WatchRequest, sink: WatchSink) -> None:
        for _ in range(BEHIND_PER_WATCH * 3):
            sink.initial(event(b"initial"))  # an initial state is never refused
        # The writer has not run since: every live event below is still waiting.
        for _ in range(BEHIND_PER_WATCH + 1):
            accepted.append(sink.send(event(b"live")))
        opened.set()

    delivered: list[tuple[list[int], bytes | str]] = []
    async with asyncio.timeout(10):
        async for message in serve_watch_stream(requests(), watch):
            delivered += described(message)

    assert accepted == [True] * BEHIND_PER_WATCH + [False]
    # Nothing put is lost: the watch ends after everything it sent.
    assert len(delivered) == BEHIND_PER_WATCH * 4 + 2
    assert delivered[-1] == ([7], "end")


def test_an_event_for_many_watches_counts_once_for_each_of_them() -> None:
    outbox = Outbox()
    outbox.watches = 4
    ids = (1, 2, 3, 4)
    assert all(outbox.put_live_many(ids, b"x") for _ in range(BEHIND_PER_WATCH))
    # Every watch has its allowance waiting: the next event is past it for all.
    assert not outbox.put_live_many(ids, b"x")
    assert len(outbox.take()) == BEHIND_PER_WATCH + 1
    assert outbox.put_live_many(ids, b"x")


async def test_what_the_writer_took_no_longer_counts_against_the_stream() -> None:
    outbox = Outbox()
    outbox.watches = 2
    sink = WatchSink(outbox, 1)
    assert all(sink.send(b"x") for _ in range(BEHIND_PER_WATCH * 2))
    assert not sink.send(b"x")
    assert len(outbox.take()) == BEHIND_PER_WATCH * 2 + 1
    assert sink.send(b"x")
