"""The watchers' side of bench/watch.py: the client processes, each opening
its share of the watches (a bare httptools protocol or aiohttp per watch) and
noting when each event reached each watcher. Apart from bench/watch.py, which
starts the system, writes the events and reports, so that each file holds one
side of the measurement; run_client is what bench/watch.py spawns.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import ssl
import threading
import time
import urllib.parse
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Barrier
from pathlib import Path
from typing import Any, cast

import httptools
import uvloop

from bench._harness import gateway_session

NAME_MARK = b'"name":"ev-'


def _event_index(line: bytes) -> int | None:
    at = line.find(NAME_MARK)
    if at < 0:
        return None
    start = at + len(NAME_MARK)
    return int(line[start : line.index(b'"', start)])


@dataclass(frozen=True)
class Share:
    """One client process's watchers: count watches of path, each until it has
    read events events."""

    url: str
    ca_file: str
    token: str
    path: str
    count: int
    events: int
    reader: str


class _LineReader(asyncio.Protocol):
    """One watch read by a bare protocol: the request written on connecting,
    the chunked response decoded by httptools as it arrives and each line
    handed to on_line from data_received, with no task woken per line (what
    aiohttp's readline costs a watcher is most of its CPU per event)."""

    def __init__(self, request: bytes, on_line: Callable[[bytes], None]) -> None:
        loop = asyncio.get_running_loop()
        self._request, self._on_line = request, on_line
        self._parser = httptools.HttpResponseParser(self)
        self._partial = b""
        self.status: asyncio.Future[int] = loop.create_future()
        self.closed: asyncio.Future[None] = loop.create_future()
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's TLS transport does not register as asyncio's Transport.
        self.transport = cast(asyncio.Transport, transport)
        self.transport.write(self._request)

    def data_received(self, data: bytes) -> None:
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError as e:
            self.end(e)

    def connection_lost(self, exc: Exception | None) -> None:
        self.end(exc)

    def end(self, error: Exception | None) -> None:
        if not self.status.done():
            self.status.set_exception(error or ConnectionError("closed before the headers"))
        if not self.closed.done():
            self.closed.set_result(None)
        if self.transport is not None:
            self.transport.close()

    # httptools' callbacks
    def on_headers_complete(self) -> None:
        self.status.set_result(self._parser.get_status_code())

    def on_body(self, body: bytes) -> None:
        if b"\n" not in body:
            self._partial += body
            return
        lines = (self._partial + body).split(b"\n")
        self._partial = lines.pop()
        for line in lines:
            self._on_line(line)


async def _watchers(share: Share, queue: Queue[Any], everyone: Barrier) -> None:
    count, events = share.count, share.events
    session = gateway_session(share.url, Path(share.ca_file), share.token)
    url = urllib.parse.urlsplit(share.url)
    host, port = url.hostname or "127.0.0.1", url.port or 443
    context = ssl.create_default_context(cafile=share.ca_file)
    request = (
        f"GET {share.path} HTTP/1.1\r\nHost: {url.netloc}\r\n"
        f"Authorization: Bearer {share.token}\r\nAccept: application/json\r\n\r\n"
    ).encode()
    received: list[list[float]] = [[0.0] * events for _ in range(count)]
    duplicates = [0]
    opened = [0]
    all_open = asyncio.Event()
    # TLS handshakes for a thousand connections at once would time some out.
    handshakes = asyncio.Semaphore(32)
    # Closing a connection costs its process time that would show as the last
    # event's latency at the watchers still reading it, in this process and
    # the others: no watcher closes until every watcher of every client
    # process is through (or has failed).
    reading = [count]
    all_read = asyncio.Event()
    release = asyncio.Event()

    def through() -> None:
        reading[0] -= 1
        if not reading[0]:
            all_read.set()

    async def release_together() -> None:
        await all_read.wait()
        with contextlib.suppress(threading.BrokenBarrierError):
            await asyncio.to_thread(everyone.wait, 60 + events)
        release.set()

    def opened_one() -> None:
        opened[0] += 1
        if opened[0] == count:
            all_open.set()

    def record(times: list[float], line: bytes) -> bool:
        """Notes when line's event arrived; whether it is one not seen before."""
        now = time.monotonic()
        index = _event_index(line)
        if index is None or index >= events:
            return False
        if times[index]:
            duplicates[0] += 1
            return False
        times[index] = now
        return True

    async def read_with_aiohttp(times: list[float], hold: Callable[[], Awaitable[None]]) -> None:
        async with handshakes:
            response = await session.get(share.path)
        async with response:
            response.raise_for_status()
            opened_one()
            seen = 0
            while seen < events:
                line = await response.content.readline()
                if not line:
                    return
                seen += record(times, line)
            await hold()

    async def read_with_protocol(times: list[float], hold: Callable[[], Awaitable[None]]) -> None:
        seen = [0]
        all_seen = asyncio.get_running_loop().create_future()

        def on_line(line: bytes) -> None:
            if record(times, line):
                seen[0] += 1
                if seen[0] == events and not all_seen.done():
                    all_seen.set_result(None)

        async with handshakes:
            _, reader = await asyncio.get_running_loop().create_connection(
                lambda: _LineReader(request, on_line), host, port, ssl=context
            )
        try:
            status = await reader.status
            if status != 200:
                raise RuntimeError(f"watch answered {status}")
            opened_one()
            await asyncio.wait([all_seen, reader.closed], return_when=asyncio.FIRST_COMPLETED)
            if all_seen.done():
                await hold()
        finally:
            reader.end(None)

    read = read_with_protocol if share.reader == "protocol" else read_with_aiohttp

    async def watch(w: int) -> None:
        counted = False

        async def hold() -> None:
            """Every event read: counted, then the connection kept until release."""
            nonlocal counted
            counted = True
            through()
            await release.wait()

        try:
            await read(received[w], hold)
        finally:
            if not counted:
                through()

    releasing = asyncio.create_task(release_together())
    tasks = [asyncio.create_task(watch(w)) for w in range(count)]
    opening = asyncio.ensure_future(all_open.wait())
    await asyncio.wait([opening, *tasks], return_when=asyncio.FIRST_COMPLETED)
    queue.put(("ready", os.getpid()))
    done, pending = await asyncio.wait(tasks, timeout=60 + events)
    for task in pending:
        task.cancel()
    failures = [repr(t.exception()) for t in done if t.exception() is not None]
    if not release.is_set():
        everyone.abort()  # no one waits for a process that gave up
    releasing.cancel()
    await session.close()
    queue.put(("done", received, duplicates[0], failures[:5]))


def run_client(loop: str, share: Share, queue: Queue[Any], everyone: Barrier) -> None:
    run = uvloop.run if loop == "uvloop" else asyncio.run
    run(_watchers(share, queue, everyone))
