"""The storage API's Pipeline results and watch frames as wire bytes written by
hand (see strata.protowire): a list answer is one serialization per item and a
join, a watch frame is its ids and the event already encoded once for all."""

from __future__ import annotations

from strata import protowire
from strata.proto.storage.v1 import storage_pb2
from strata.storage._interface import ListResult

# Result's answer fields (storage.proto).
RESULT_FIELDS = {
    "object": 2,
    "list": 3,
    "current_revision": 4,
    "count": 5,
    "compact": 6,
    "failure": 7,
    "request_progress": 8,
}
_RESULT_KEYS = protowire.result_keys(RESULT_FIELDS)


def result(call_id: int, field: str, payload: bytes) -> bytes:
    """Result bytes: the call's id and the answer field named field carrying payload."""
    return protowire.result(call_id, _RESULT_KEYS[field], payload)


def list_response(result: ListResult) -> bytes:
    """ListResponse bytes for result."""
    encoded = result.encoded
    if encoded is None:
        encoded = [item.SerializeToString() for item in result.items]
    return protowire.repeated_bytes(1, encoded) + protowire.fields(
        (2, result.resource_version or None),
        (3, result.continue_token.encode() or None),
        (4, result.remaining_item_count),
    )


def watch_frame(
    ids: list[int], event: bytes | None = None, *, ended: bool = False, failure: bytes = b""
) -> bytes:
    """WatchFrame bytes: the watch ids, then an encoded WatchEvent or the end."""
    # protobuf packs a thousand ids far faster than varint() here could.
    parts = [storage_pb2.WatchFrame(ids=ids).SerializeToString()]
    if event is not None:
        parts.append(protowire.length_delimited(2, event))
    if ended:
        parts.append(protowire.varint_field(3, 1))
    if failure:
        parts.append(protowire.length_delimited(4, failure))
    return b"".join(parts)


_ADDED = protowire.fields((1, storage_pb2.WatchEvent.ADDED))


def added_event(encoded_object: bytes, revision: int) -> bytes:
    """WatchEvent bytes: an ADDED of the object (already serialized) at revision."""
    return _ADDED + protowire.length_delimited(2, encoded_object) + protowire.fields((3, revision))
