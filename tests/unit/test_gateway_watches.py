"""A client watch in the gateway never makes the others wait: lines for a
client whose connection is paused pile up to BACKLOG, then its watch ends."""

from __future__ import annotations

import asyncio
from typing import Any, cast

from aiohttp import web
from aiohttp.base_protocol import BaseProtocol

from services.gateway.watches import BACKLOG, ClientWatch, chunk, event_line
from strata.proto.registry.v1 import registry_pb2


class Connection:
    """Stands in for aiohttp's response, protocol and transport: records the bytes
    on the wire (the response frames what it is given as a chunk, as aiohttp's
    does), can pause and close."""

    def __init__(self) -> None:
        self.wire: list[bytes] = []
        self.writing_paused = False
        self.closing = False

    def is_closing(self) -> bool:
        return self.closing

    def write(self, data: bytes) -> None:  # the transport's
        self.wire.append(data)

    async def write_chunk(self, line: bytes) -> None:  # the response's
        self.wire.append(chunk(line))

    @property
    def lines(self) -> list[bytes]:
        return [framed.split(b"\r\n")[1] for framed in self.wire]


class Response:
    def __init__(self, connection: Connection) -> None:
        self.write = connection.write_chunk


def send(watch: ClientWatch, line: bytes) -> None:
    watch.send(line, chunk(line))


class NoStream:
    def forget(self, watch_id: int) -> None:
        pass


def watch_on(connection: Connection) -> ClientWatch:
    watch = ClientWatch(1, cast(Any, NoStream()))
    watch.start()
    watch.attach(
        cast(web.StreamResponse, Response(connection)),
        cast(BaseProtocol, connection),
        cast(asyncio.WriteTransport, connection),
    )
    return watch


async def test_lines_go_straight_out_while_the_connection_takes_them() -> None:
    connection = Connection()
    watch = watch_on(connection)
    for n in range(3):
        send(watch, b"%d\n" % n)
    assert connection.lines == [b"0\n", b"1\n", b"2\n"]
    assert not watch.finished.done()


async def test_a_paused_client_is_ended_past_its_backlog() -> None:
    connection = Connection()
    watch = watch_on(connection)
    connection.writing_paused = True
    for n in range(BACKLOG):
        send(watch, b"%d\n" % n)
    assert not watch.finished.done() and not watch.terminated
    send(watch, b"one too many\n")
    assert watch.terminated and watch.finished.done()


async def test_a_backlog_is_written_in_order_once_the_client_reads_again() -> None:
    connection = Connection()
    watch = watch_on(connection)
    connection.writing_paused = True
    send(watch, b"a\n")
    send(watch, b"b\n")
    connection.writing_paused = False
    send(watch, b"c\n")  # behind the backlog, never ahead of it
    await watch.drained()
    assert connection.lines == [b"a\n", b"b\n", b"c\n"]


async def test_lines_on_the_wire_are_the_chunks_aiohttp_would_write() -> None:
    assert chunk(b'{"type":"ADDED"}\n') == b'11\r\n{"type":"ADDED"}\n\r\n'


async def test_a_closed_connection_finishes_the_watch() -> None:
    connection = Connection()
    watch = watch_on(connection)
    connection.closing = True
    send(watch, b"gone\n")
    assert watch.finished.done() and not watch.terminated
    assert connection.wire == []


def test_event_lines_have_gos_escapes_and_others_are_as_they_came() -> None:
    """As kube's watch encoder writes the object (recorded from kube v1.36)."""
    event = registry_pb2.WatchEvent(
        type="ADDED", object='{"data":{"k":"<&>","s":"a\u2028b\u2029c"}}'.encode()
    )
    assert event_line(event) == (
        b'{"type":"ADDED","object":{"data":{"k":"\\u003c\\u0026\\u003e",'
        b'"s":"a\\u2028b\\u2029c"}}}\n'
    )
    plain = registry_pb2.WatchEvent(type="DELETED", object=b'{"data":{"k":"\xc3\xa9"}}')
    assert event_line(plain) == b'{"type":"DELETED","object":{"data":{"k":"\xc3\xa9"}}}\n'
