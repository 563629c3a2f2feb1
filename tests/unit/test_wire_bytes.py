"""Hand-written Pipeline bytes are exactly what the messages serialize to."""

from __future__ import annotations

import pytest

from services.registry.generic.options import Page
from services.registry.server import _list_bytes, _list_response
from strata import protowire
from strata.proto.registry.v1 import registry_pb2
from strata.proto.storage.v1 import storage_pb2
from strata.storage import ListResult
from strata.storage import wire_bytes as wire


def _objects(count: int) -> list[storage_pb2.Object]:
    return [
        storage_pb2.Object(
            key=f"/things/ns/o{i}",
            value=b'{"metadata":{}}' * (i + 1),
            resource_version=10 + i,
            name=f"o{i}",
            labels={"a": str(i)},
        )
        for i in range(count)
    ]


@pytest.mark.parametrize(
    "result",
    [
        ListResult(items=[], resource_version=0),
        ListResult(items=_objects(3), resource_version=300, continue_token="tok"),
        ListResult(items=_objects(2), resource_version=1 << 40, remaining_item_count=0),
        ListResult(items=_objects(1), resource_version=7, remaining_item_count=123456),
    ],
)
def test_list_response_bytes(result: ListResult) -> None:
    message = storage_pb2.ListResponse(items=result.items, resource_version=result.resource_version)
    setattr(message, "continue", result.continue_token)
    if result.remaining_item_count is not None:
        message.remaining_item_count = result.remaining_item_count
    encoded = bytes(wire.list_response(result))
    assert storage_pb2.ListResponse.FromString(encoded) == message
    assert encoded == message.SerializeToString()


def test_results_bytes_parse_back() -> None:
    obj = _objects(1)[0]
    encoded = [
        wire.result(1, "object", obj.SerializeToString()),
        wire.result(300, "compact", b""),
        wire.result(2**40, "count", storage_pb2.CountResponse(count=5).SerializeToString()),
        wire.result(4, "failure", storage_pb2.Failure(error="KeyNotFound").SerializeToString()),
    ]
    parsed = storage_pb2.Results.FromString(protowire.repeated(encoded))
    assert [r.id for r in parsed.results] == [1, 300, 2**40, 4]
    assert parsed.results[0].object == obj
    assert parsed.results[1].WhichOneof("response") == "compact"
    assert parsed.results[2].count.count == 5
    assert parsed.results[3].failure.error == "KeyNotFound"


@pytest.mark.parametrize(
    "page",
    [
        Page(items=[], resource_version=0),
        Page(items=[b'{"a":1}', b"", b"x" * 20000], resource_version=2**40, continue_token="t"),
        Page(items=[], resource_version=5, table=b'{"kind":"Table"}', remaining_item_count=0),
        Page(items=[b"{}"], resource_version=7, remaining_item_count=123456),
    ],
)
def test_registry_list_bytes(page: Page) -> None:
    pieces = _list_bytes(page)
    assert bytes(pieces) == _list_response(page).SerializeToString()
    assert pieces.size == len(bytes(pieces))


def test_registry_results_parse_back() -> None:
    result = protowire.ResultWriter({"object": 2, "list": 3, "failure": 4})
    page = Page(items=[b'{"kind":"ConfigMap"}'] * 3, resource_version=12, continue_token="c")
    answer = registry_pb2.ObjectResponse(object=b"{}", warnings=["careful"])
    encoded = [
        result(1, "list", _list_bytes(page)),
        result(2**33, "object", answer.SerializeToString()),
        result(3, "failure", registry_pb2.Failure(code=5).SerializeToString()),
    ]
    parsed = registry_pb2.Results.FromString(protowire.repeated(encoded)).results
    assert [r.id for r in parsed] == [1, 2**33, 3]
    assert parsed[0].list == _list_response(page)
    assert parsed[1].object == answer
    assert parsed[2].failure.code == 5


@pytest.mark.parametrize("value", [0, 1, 127, 128, 300, 1234, 16383, 16384, 2**35, 2**63 - 1, -1])
def test_varints_match_protobuf(value: int) -> None:
    message = storage_pb2.ListResponse(remaining_item_count=value)  # optional: 0 is written too
    assert protowire.varint(value) == message.SerializeToString()[1:]


def test_watch_frames_bytes_parse_back() -> None:
    event = storage_pb2.WatchEvent(
        type=storage_pb2.WatchEvent.ADDED, object=_objects(1)[0], resource_version=9
    )
    failure = storage_pb2.Failure(error="Expired", message="too old", key="/k")
    encoded = [
        wire.watch_frame([1, 300, 2**40], event.SerializeToString()),
        wire.watch_frame([7], ended=True),
        wire.watch_frame([8, 9], ended=True, failure=failure.SerializeToString()),
    ]
    frames = storage_pb2.WatchFrames.FromString(protowire.repeated(encoded)).frames
    assert list(frames[0].ids) == [1, 300, 2**40] and frames[0].event == event
    assert not frames[0].ended and not frames[0].HasField("failure")
    assert list(frames[1].ids) == [7] and frames[1].ended and not frames[1].HasField("event")
    assert list(frames[2].ids) == [8, 9] and frames[2].ended and frames[2].failure == failure
    for message in frames:
        assert message.SerializeToString() == wire.watch_frame(
            list(message.ids),
            message.event.SerializeToString() if message.HasField("event") else None,
            ended=message.ended,
            failure=message.failure.SerializeToString() if message.HasField("failure") else b"",
        )


def test_added_event_bytes() -> None:
    obj = _objects(1)[0]
    event = storage_pb2.WatchEvent(
        type=storage_pb2.WatchEvent.ADDED, object=obj, resource_version=9
    )
    assert wire.added_event(obj.SerializeToString(), 9) == event.SerializeToString()


def test_list_response_uses_the_encoded_items_it_is_given() -> None:
    objects = _objects(2)
    given = ListResult(
        items=objects, resource_version=4, encoded=[o.SerializeToString() for o in objects]
    )
    assert bytes(wire.list_response(given)) == bytes(
        wire.list_response(ListResult(items=objects, resource_version=4))
    )
