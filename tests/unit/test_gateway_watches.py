"""A client watch in the gateway never makes the others wait: lines for a
client whose connection is paused pile up to BACKLOG, then its watch ends."""

from __future__ import annotations

import asyncio
from typing import Any, cast

from aiohttp import web
from aiohttp.base_protocol import BaseProtocol

from services.gateway.watches import BACKLOG, DIRECT_BYTES, ClientWatch


class Connection:
    """Stands in for aiohttp's response and protocol: records lines, can pause."""

    def __init__(self) -> None:
        self.lines: list[bytes] = []
        self.writing_paused = False
        self.buffered = 0

    def get_write_buffer_size(self) -> int:
        return self.buffered

    async def write(self, line: bytes) -> None:
        self.lines.append(line)


class NoStream:
    def forget(self, watch_id: int) -> None:
        pass


def watch_on(connection: Connection) -> ClientWatch:
    watch = ClientWatch(1, cast(Any, NoStream()))
    watch.start()
    watch.attach(
        cast(web.StreamResponse, connection),
        cast(BaseProtocol, connection),
        cast(asyncio.WriteTransport, connection),
    )
    return watch


async def test_lines_go_straight_out_while_the_connection_takes_them() -> None:
    connection = Connection()
    watch = watch_on(connection)
    for n in range(3):
        await watch.send(b"%d\n" % n)
    assert connection.lines == [b"0\n", b"1\n", b"2\n"]
    assert not watch.finished.done()


async def test_a_paused_client_is_ended_past_its_backlog() -> None:
    connection = Connection()
    watch = watch_on(connection)
    connection.writing_paused = True
    for n in range(BACKLOG):
        await watch.send(b"%d\n" % n)
    assert not watch.finished.done() and not watch.terminated
    await watch.send(b"one too many\n")
    assert watch.terminated and watch.finished.done()


async def test_a_backlog_is_written_in_order_once_the_client_reads_again() -> None:
    connection = Connection()
    watch = watch_on(connection)
    connection.writing_paused = True
    await watch.send(b"a\n")
    await watch.send(b"b\n")
    connection.writing_paused = False
    await watch.send(b"c\n")  # behind the backlog, never ahead of it
    await watch.drained()
    assert connection.lines == [b"a\n", b"b\n", b"c\n"]


async def test_a_line_that_could_pause_the_connection_goes_through_the_backlog() -> None:
    connection = Connection()
    watch = watch_on(connection)
    connection.buffered = DIRECT_BYTES  # nearly full: writing now could wait
    await watch.send(b"late\n")
    assert connection.lines == []  # not written by the sender itself
    await watch.drained()
    assert connection.lines == [b"late\n"]
