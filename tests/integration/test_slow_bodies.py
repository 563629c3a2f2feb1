"""Issue 30: request bodies that do not arrive, or are too large, answered as
kube-apiserver v1.36 answers them, on a bounded timer, over raw HTTP/1.1.

Recorded against a real kube (a POST of a ConfigMap declaring 50 MB and
sending 10 bytes): over HTTP/2, and over HTTP/1.1 for a body that trickles a
byte a second, kube's timeout filter answers at the request's deadline (60 s,
or ?timeout=) with the 504 below and closes the connection (HTTP/2: resets
the stream). Over HTTP/1.1 a body that stops altogether is never answered by
kube (Go's server waits on the stuck read before it writes): the bug this
issue is about, which strata does not copy; it answers that body as the
others. A body past 3 MiB is kube's 413, the connection closed unless the
body ran out just past the limit.

A system of its own, whose gateway has --request-timeout=2s, so that a
deadline is seconds rather than a minute. Throughout, /readyz and a read are
answered within a second, and 200 such bodies at once are all answered and
their connections (the gateway's files) closed by the deadline."""

from __future__ import annotations

import asyncio
import contextlib
import os
import ssl
import time
import urllib.parse
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import pytest

from strata.dev import System
from tests.support.sessions import admin_session

DEADLINE_SECONDS = 2.0
CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
LIMIT = 3 * 1024 * 1024
DECLARED = 50_000_000
FIRST_BYTES = b'{"apiVersi'
CONFIGMAP = b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"slow"}}'
# kube's timeout filter's answer, byte for byte (Content-Type as Go sniffed it).
TIMED_OUT = (
    b'{"metadata":{},"status":"Failure","message":"Timeout: request did not complete'
    b' within the allotted timeout","reason":"Timeout","details":{},"code":504}\n'
)
TOO_LARGE = (
    b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":'
    b'"Request entity too large: limit is 3145728","reason":"RequestEntityTooLarge",'
    b'"code":413}\n'
)


@dataclass(frozen=True)
class Answer:
    status: int
    headers: dict[str, str]  # names in lower case
    body: bytes
    closed: bool  # the gateway closed the connection after it
    seconds: float  # from the request's last bytes sent to the answer


@pytest.fixture(scope="module")
def slow_system(tmp_path_factory: pytest.TempPathFactory) -> Iterator[System]:
    home: Path = tmp_path_factory.mktemp("strata-slow-bodies")
    system = System(
        home, gateway_port=0, env={"STRATA_GATEWAY_REQUEST_TIMEOUT": f"{DEADLINE_SECONDS}s"}
    )
    system.start()
    yield system
    system.stop()


@pytest.fixture(scope="module")
async def admin(slow_system: System) -> AsyncIterator[aiohttp.ClientSession]:
    async with admin_session(slow_system) as session:
        yield session


async def _connect(system: System) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    assert system.endpoints is not None
    url = urllib.parse.urlsplit(system.endpoints.gateway)
    context = ssl.create_default_context(cafile=str(system.ca_file))
    return await asyncio.open_connection(
        url.hostname, url.port, ssl=context, server_hostname=url.hostname
    )


def _head(system: System, framing: str, query: str = "") -> bytes:
    """A POST of a ConfigMap, as admin, its body framed by framing (a
    Content-Length or Transfer-Encoding header)."""
    return (
        f"POST {CONFIGMAPS}{query} HTTP/1.1\r\nHost: strata\r\n"
        f"Authorization: Bearer {system.admin_token}\r\n"
        f"Content-Type: application/json\r\n{framing}\r\n\r\n"
    ).encode()


async def _answer(reader: asyncio.StreamReader, sent: float, within: float) -> Answer:
    """The gateway's answer, read within seconds, and whether it closed the
    connection after it (within the next second)."""
    async with asyncio.timeout(within):
        head = await reader.readuntil(b"\r\n\r\n")
        seconds = time.monotonic() - sent
        status_line, *lines = head.decode().split("\r\n")[:-2]
        headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
        body = await reader.readexactly(int(headers["content-length"]))
    try:
        async with asyncio.timeout(1):
            closed = await reader.read(1) == b""
    except TimeoutError:
        closed = False
    return Answer(int(status_line.split()[1]), headers, body, closed, seconds)


async def _healthy(http: aiohttp.ClientSession) -> None:
    """/readyz is 200 and a read is answered, each within a second."""
    async with asyncio.timeout(1), http.get("/readyz") as ready:
        assert ready.status == 200
    async with asyncio.timeout(1), http.get(CONFIGMAPS) as read:
        assert read.status == 200


def _timed_out(answer: Answer, deadline: float) -> None:
    """kube's timeout filter's 504, at the deadline, the connection closed."""
    assert answer.status == 504
    assert answer.headers["content-type"] == "text/plain; charset=utf-8"
    assert answer.headers["connection"] == "close"
    assert answer.body == TIMED_OUT
    assert answer.closed
    assert deadline - 0.1 <= answer.seconds <= deadline + 1


@pytest.mark.parametrize(
    ("query", "deadline"), [("", DEADLINE_SECONDS), ("?timeout=1s", 1.0)], ids=["flag", "query"]
)
async def test_a_body_that_stops_is_answered_at_the_deadline(
    slow_system: System, admin: aiohttp.ClientSession, query: str, deadline: float
) -> None:
    """50 MB declared, 10 bytes sent, then nothing: kube's 504 at the deadline
    (--request-timeout, or a shorter ?timeout=), not a connection held."""
    reader, writer = await _connect(slow_system)
    try:
        writer.write(_head(slow_system, f"Content-Length: {DECLARED}", query) + FIRST_BYTES)
        await writer.drain()
        sent = time.monotonic()
        await _healthy(admin)
        _timed_out(await _answer(reader, sent, within=deadline + 2), deadline)
    finally:
        writer.close()
    await _healthy(admin)


async def test_a_trickling_body_is_answered_at_the_deadline(
    slow_system: System, admin: aiohttp.ClientSession
) -> None:
    """A byte every quarter second for ever: cut at the deadline all the same."""
    reader, writer = await _connect(slow_system)

    async def trickle() -> None:
        with contextlib.suppress(ConnectionError):
            while not writer.is_closing():
                writer.write(b" ")
                await writer.drain()
                await asyncio.sleep(0.25)

    writer.write(_head(slow_system, f"Content-Length: {DECLARED}") + FIRST_BYTES)
    await writer.drain()
    sent = time.monotonic()
    trickling = asyncio.create_task(trickle())
    try:
        await _healthy(admin)
        _timed_out(await _answer(reader, sent, within=DEADLINE_SECONDS + 2), DEADLINE_SECONDS)
    finally:
        writer.close()
        trickling.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await trickling
    await _healthy(admin)


def _padded(size: int) -> bytes:
    """A ConfigMap of size bytes (whitespace after it)."""
    return CONFIGMAP + b" " * (size - len(CONFIGMAP))


def _chunked(body: bytes) -> bytes:
    return b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)


@pytest.mark.parametrize(
    ("framing", "body", "closed"),
    [
        (f"Content-Length: {4_000_000}", _padded(4_000_000), True),
        ("Transfer-Encoding: chunked", _chunked(_padded(4_000_000)), True),
        (f"Content-Length: {DECLARED}", _padded(4_000_000), True),
        (f"Content-Length: {LIMIT + 1}", _padded(LIMIT + 1), False),
    ],
    ids=["4MB", "4MB-chunked", "4MB-of-50MB", "limit+1"],
)
async def test_a_body_past_the_limit_is_413(
    slow_system: System, admin: aiohttp.ClientSession, framing: str, body: bytes, closed: bool
) -> None:
    """kube's 413 past 3 MiB, at once; its connection closed unless the body
    ended just past the limit (Go keeps that one open)."""
    reader, writer = await _connect(slow_system)
    try:
        # Written without waiting: the gateway answers before it has read it all.
        writer.write(_head(slow_system, framing, "?dryRun=All") + body)
        answer = await _answer(reader, time.monotonic(), within=5)
    finally:
        writer.close()
    assert (answer.status, answer.body) == (413, TOO_LARGE)
    assert answer.headers["content-type"] == "application/json"
    assert answer.closed == closed
    assert answer.headers.get("connection") == ("close" if closed else None)
    await _healthy(admin)


async def test_a_body_at_the_limit_is_read(slow_system: System) -> None:
    """Exactly 3 MiB passes, as in kube (a dry-run create: 201)."""
    reader, writer = await _connect(slow_system)
    try:
        writer.write(_head(slow_system, f"Content-Length: {LIMIT}", "?dryRun=All") + _padded(LIMIT))
        answer = await _answer(reader, time.monotonic(), within=5)
    finally:
        writer.close()
    assert answer.status == 201
    assert not answer.closed


def _open_files(system: System) -> int:
    return len(os.listdir(f"/proc/{system.process('gateway').pid}/fd"))


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts files in /proc")
async def test_many_slow_bodies_leave_the_gateway_serving(
    slow_system: System, admin: aiohttp.ClientSession
) -> None:
    """200 bodies that stop at once (kube's --max-mutating-requests-inflight
    of them): the gateway serves on meanwhile, answers each at its deadline,
    and holds none of their connections after."""
    await _healthy(admin)
    baseline = _open_files(slow_system)
    connections = await asyncio.gather(*(_connect(slow_system) for _ in range(200)))
    head = _head(slow_system, f"Content-Length: {DECLARED}") + FIRST_BYTES
    for _, writer in connections:
        writer.write(head)
    await asyncio.gather(*(writer.drain() for _, writer in connections))
    sent = time.monotonic()
    try:
        assert _open_files(slow_system) >= baseline + 200
        for _ in range(3):
            await _healthy(admin)
        answers = await asyncio.gather(
            *(_answer(reader, sent, within=DEADLINE_SECONDS + 5) for reader, _ in connections)
        )
    finally:
        for _, writer in connections:
            writer.close()
    assert {(a.status, a.body, a.closed) for a in answers} == {(504, TIMED_OUT, True)}
    # Back to what it held before, give or take the odd connection of its own.
    for _ in range(40):
        if (held := _open_files(slow_system)) <= baseline + 5:
            break
        await asyncio.sleep(0.05)
    assert held <= baseline + 5
    await _healthy(admin)
