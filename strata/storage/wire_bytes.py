"""The storage API's Pipeline results and watch frames as wire bytes written by
hand (see strata.protowire): a list answer is one serialization per item and a
join, a watch frame is its ids and the event already encoded once for all."""

from __future__ import annotations

from strata import protowire
from strata.proto.storage.v1 import storage_pb2
from strata.storage._interface import ListResult

# The answer fields of a Result (storage.proto), by name.
result = protowire.ResultWriter(
    {
        "object": 2,
        "list": 3,
        "current_revision": 4,
        "count": 5,
        "compact": 6,
        "failure": 7,
        "request_progress": 8,
    }
)


def list_response(listed: ListResult) -> protowire.Pieces:
    """ListResponse bytes for listed, in pieces."""
    encoded = listed.encoded
    if encoded is None:
        encoded = [item.SerializeToString() for item in listed.items]
    return protowire.repeated_bytes(
        1,
        encoded,
        (2, listed.resource_version or None),
        (3, listed.continue_token.encode() or None),
        (4, listed.remaining_item_count),
    )


def watch_frame(
    ids: list[int], event: bytes | None = None, *, ended: bool = False, failure: bytes = b""
) -> bytes:
    """WatchFrame bytes: the watch ids, then an encoded WatchEvent or the end."""
    # protobuf packs a thousand ids far faster than varint() here could.
    packed = storage_pb2.WatchFrame(ids=ids).SerializeToString()
    return packed + protowire.fields((2, event), (3, 1 if ended else None), (4, failure or None))


def added_event(encoded_object: bytes, revision: int) -> bytes:
    """WatchEvent bytes: an ADDED of the object (already serialized) at revision."""
    return protowire.fields((1, storage_pb2.WatchEvent.ADDED), (2, encoded_object), (3, revision))
