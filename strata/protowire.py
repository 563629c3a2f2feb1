"""Protobuf wire bytes written by hand, for the large answers of the Pipeline
streams (strata.pipeline) of the storage API and the registry API.

A list of thousands of items copied into a ListResponse, that into a Result,
that into a Results, sized and then serialized costs more than the list's own
work; written as bytes it is one pass and a join. A list answer stays in its
pieces (Pieces) until the Results carrying it is joined: each copy of a 6 MB
answer costs milliseconds (fresh pages to fault in, then the copy). What these
functions write is exactly what the messages serialize to, so the other end
parses it as usual (tests/unit/test_wire_bytes.py checks), and a servicer sends
it with `identity` as its response serializer (see strata.service.add_servicer).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

VARINT, LEN = 0, 2


class Pieces:
    """A message's bytes still in the pieces they are made of, joined once, by
    `repeated`, into the message that carries it."""

    __slots__ = ("parts", "size")

    def __init__(self, parts: list[bytes], size: int | None = None) -> None:
        self.parts = parts
        self.size = sum(map(len, parts)) if size is None else size

    def __bytes__(self) -> bytes:
        return b"".join(self.parts)


# A message's bytes, whole or in pieces.
Encoded = bytes | Pieces


def size_of(encoded: Encoded) -> int:
    return encoded.size if isinstance(encoded, Pieces) else len(encoded)


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


def _field_parts(numbered: Iterable[tuple[int, int | bytes | None]]) -> list[bytes]:
    parts: list[bytes] = []
    for number, value in numbered:
        if isinstance(value, int):
            parts += (key(number, VARINT), varint(value))
        elif value is not None:
            parts += (key(number, LEN), varint(len(value)), value)
    return parts


def fields(*numbered: tuple[int, int | bytes | None]) -> bytes:
    """A message's singular fields in order: an int as a varint, bytes as
    length-delimited (a message's bytes too), None left out (pass None for a
    default proto3 does not write; an `optional` field's 0 is written)."""
    return b"".join(_field_parts(numbered))


def repeated_bytes(
    field: int, values: list[bytes], *then: tuple[int, int | bytes | None]
) -> Pieces:
    """Every value as one occurrence of a repeated bytes (or message) field,
    followed by the singular fields then (as `fields` writes them), left in
    pieces: a list's megabytes are copied only into the message carrying it."""
    field_key = key(field, LEN)
    parts: list[bytes] = []
    for value in values:
        parts += (field_key, varint(len(value)), value)
    parts += _field_parts(then)
    return Pieces(parts)


_FIRST = key(1, LEN)


def repeated(encoded: Sequence[Encoded]) -> bytes:
    """The bytes of a message whose field 1 repeats the given messages (a Results
    of Result messages, a WatchFrames of WatchFrame messages), in one join."""
    parts: list[bytes] = []
    for message in encoded:
        if isinstance(message, Pieces):
            parts += (_FIRST, varint(message.size))
            parts += message.parts
        else:
            parts += (_FIRST, varint(len(message)), message)
    return b"".join(parts)


class ResultWriter:
    """Writes one API's pipelined Result: the call's id (field 1 of both APIs'
    Result) and one answer field, by name, carrying the answer's bytes."""

    _ID_KEY = key(1, VARINT)

    def __init__(self, answer_fields: Mapping[str, int]) -> None:
        self._keys = {name: key(number, LEN) for name, number in answer_fields.items()}

    def __call__(self, call_id: int, field: str, payload: Encoded) -> Encoded:
        """The Result, in pieces when its answer is (a list)."""
        head = [self._ID_KEY, varint(call_id), self._keys[field]]
        if isinstance(payload, Pieces):
            head.append(varint(payload.size))
            return Pieces(head + payload.parts, sum(map(len, head)) + payload.size)
        head += (varint(len(payload)), payload)
        return b"".join(head)


def identity(data: bytes) -> bytes:
    return data
