"""How Storage/WatchStream groups watches' items into frames: one frame per
shared event object, never reordering any one watch's items."""

from __future__ import annotations

from strata.proto.storage.v1 import storage_pb2
from strata.storage import _wire_bytes as wire
from strata.storage._watch_stream import Item, frames


def parsed(encoded: list[bytes]) -> list[tuple[list[int], bytes | str]]:
    out: list[tuple[list[int], bytes | str]] = []
    for frame in storage_pb2.WatchFrames.FromString(wire.repeated(encoded)).frames:
        if frame.HasField("event"):
            out.append((list(frame.ids), frame.event.object.value))
        else:
            out.append(
                (list(frame.ids), frame.failure.error if frame.HasField("failure") else "end")
            )
    return out


def event(value: bytes) -> bytes:
    return storage_pb2.WatchEvent(
        type=storage_pb2.WatchEvent.MODIFIED, object=storage_pb2.Object(value=value)
    ).SerializeToString()


def test_one_frame_per_shared_event() -> None:
    a, b = event(b"a"), event(b"b")
    items: list[tuple[int, Item]] = [(1, a), (1, b), (2, a), (2, b), (3, a), (3, b)]
    assert parsed(frames(items)) == [([1, 2, 3], b"a"), ([1, 2, 3], b"b")]


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
