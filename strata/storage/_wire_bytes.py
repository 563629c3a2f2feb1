"""Pipeline results written as protobuf wire bytes by hand.

A 1000-item list copied into a ListResponse, then into a Result, then into a
Results costs more than reading it from etcd; written as bytes it is one
serialization per item and concatenation. The bytes are exactly what the
messages in storage.proto would serialize to, so clients parse them as usual
(tests/unit/test_wire_bytes.py checks they are equal).
"""

from __future__ import annotations

from strata.proto.storage.v1 import storage_pb2
from strata.storage._interface import ListResult

_VARINT, _LEN = 0, 2

# Result's fields (storage.proto).
RESULT_ID = 1
RESULT_FIELDS = {
    "object": 2,
    "list": 3,
    "current_revision": 4,
    "count": 5,
    "compact": 6,
    "failure": 7,
    "request_progress": 8,
}


def varint(value: int) -> bytes:
    if 0 <= value < 0x80:  # ids and small lengths: most calls
        return _SMALL[value]
    if 0 < value < 0x4000:  # an object's length: every item of a list
        return bytes((value & 0x7F | 0x80, value >> 7))
    if value < 0:
        value += 1 << 64
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


_SMALL = [bytes((i,)) for i in range(0x80)]


def _key(field: int, wire_type: int) -> bytes:
    return varint(field << 3 | wire_type)


def _length_delimited(field: int, payload: bytes) -> bytes:
    return _key(field, _LEN) + varint(len(payload)) + payload


def list_response(result: ListResult) -> bytes:
    """ListResponse bytes for result."""
    items_key = _key(1, _LEN)
    parts = []
    for item in result.items:
        data = item.SerializeToString()
        parts.append(items_key + varint(len(data)) + data)
    if result.resource_version:
        parts.append(_key(2, _VARINT) + varint(result.resource_version))
    if result.continue_token:
        parts.append(_length_delimited(3, result.continue_token.encode()))
    if result.remaining_item_count is not None:
        parts.append(_key(4, _VARINT) + varint(result.remaining_item_count))
    return b"".join(parts)


_RESULT_ID_KEY = _key(RESULT_ID, _VARINT)
_RESULT_FIELD_KEYS = {name: _key(number, _LEN) for name, number in RESULT_FIELDS.items()}


def result(call_id: int, field: str, payload: bytes) -> bytes:
    """Result bytes: the call's id and one answer field carrying payload."""
    return b"".join(
        (_RESULT_ID_KEY, varint(call_id), _RESULT_FIELD_KEYS[field], varint(len(payload)), payload)
    )


_REPEATED_KEY = _key(1, _LEN)


def repeated(encoded: list[bytes]) -> bytes:
    """The bytes of a message whose field 1 repeats the given messages (Results of
    Result bytes, WatchFrames of WatchFrame bytes)."""
    parts: list[bytes] = []
    for r in encoded:
        parts += (_REPEATED_KEY, varint(len(r)), r)
    return b"".join(parts)


def watch_frame(
    ids: list[int], event: bytes | None = None, *, ended: bool = False, failure: bytes = b""
) -> bytes:
    """WatchFrame bytes: the watch ids, then an encoded WatchEvent or the end."""
    # protobuf packs a thousand ids far faster than varint() here could.
    parts = [storage_pb2.WatchFrame(ids=ids).SerializeToString()]
    if event is not None:
        parts.append(_length_delimited(2, event))
    if ended:
        parts.append(_key(3, _VARINT) + varint(1))
    if failure:
        parts.append(_length_delimited(4, failure))
    return b"".join(parts)


def identity(data: bytes) -> bytes:
    return data
