"""Protobuf wire bytes written by hand, for the large answers of the Pipeline
streams (strata.pipeline) of the storage API and the registry API.

A list of thousands of items copied into a ListResponse, that into a Result,
that into a Results, sized and then serialized costs more than the list's own
work; written as bytes it is one pass and a join. What these functions write is
exactly what the messages serialize to, so the other end parses it as usual
(tests/unit/test_wire_bytes.py checks), and a servicer sends it with `identity`
as its response serializer (see strata.service.add_servicer).
"""

from __future__ import annotations

from collections.abc import Mapping

VARINT, LEN = 0, 2


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


def key(field: int, wire_type: int) -> bytes:
    return varint(field << 3 | wire_type)


def length_delimited(field: int, payload: bytes) -> bytes:
    return key(field, LEN) + varint(len(payload)) + payload


def varint_field(field: int, value: int) -> bytes:
    return key(field, VARINT) + varint(value)


def fields(*numbered: tuple[int, int | bytes | None]) -> bytes:
    """A message's singular fields in order: an int as a varint, bytes as
    length-delimited, None left out (pass None for a default proto3 does not
    write; an `optional` field's 0 is written)."""
    parts: list[bytes] = []
    for number, value in numbered:
        if isinstance(value, int):
            parts += (key(number, VARINT), varint(value))
        elif value is not None:
            parts += (key(number, LEN), varint(len(value)), value)
    return b"".join(parts)


def repeated_bytes(field: int, values: list[bytes]) -> bytes:
    """Every value as one occurrence of a repeated bytes (or message) field."""
    field_key = key(field, LEN)
    parts: list[bytes] = []
    for value in values:
        parts += (field_key, varint(len(value)), value)
    return b"".join(parts)


def repeated(encoded: list[bytes]) -> bytes:
    """The bytes of a message whose field 1 repeats the given messages (Results of
    Result bytes, WatchFrames of WatchFrame bytes)."""
    return repeated_bytes(1, encoded)


# A pipelined Result's id (field 1 of both APIs' Result).
_RESULT_ID_KEY = key(1, VARINT)


def result_keys(fields: Mapping[str, int]) -> dict[str, bytes]:
    """The keys of a Result's answer fields, by name, for `result`."""
    return {name: key(number, LEN) for name, number in fields.items()}


def result(call_id: int, answer_key: bytes, payload: bytes) -> bytes:
    """Result bytes: the call's id and one answer field (its key from
    result_keys) carrying payload."""
    return b"".join((_RESULT_ID_KEY, varint(call_id), answer_key, varint(len(payload)), payload))


def identity(data: bytes) -> bytes:
    return data
