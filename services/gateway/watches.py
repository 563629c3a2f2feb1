"""The gateway's watches: every client's watch on one Registry/WatchStream.

Each event frame from the registry becomes one watch event line, framed once
as an HTTP chunk and written to the transport of every client the frame names,
without waiting on any of them. A client whose connection has paused (its
buffer is over the transport's high-water mark) gets a backlog of up to BACKLOG
lines, written by a task of its own as the connection drains; past that its
watch ends, and it resumes from its last event (kube's cacher treats a slow
watcher the same way).
"""

from __future__ import annotations

import asyncio
import itertools
from collections import deque
from collections.abc import AsyncIterator, Callable
from typing import NamedTuple

import grpc
from aiohttp import web
from aiohttp.base_protocol import BaseProtocol

from strata import telemetry
from strata.api import errors, gomarshal
from strata.api.errors import StatusError
from strata.api.wire import carried_status, status_from_rpc_error
from strata.proto.registry.v1 import registry_pb2, registry_pb2_grpc

BACKLOG = 1024


def event_line(event: registry_pb2.WatchEvent) -> bytes:
    """The event as kube's watch encoder writes it: Go's escapes in the object
    (made once per event, for every watcher it goes to; an object without the
    characters Go escapes, nearly every one, is left as it is)."""
    line = b'{"type":"' + event.type.encode() + b'","object":' + event.object + b"}\n"
    return gomarshal.escaped(line)


def chunk(line: bytes) -> bytes:
    """line as one chunk of a chunked response: the bytes aiohttp's write sends."""
    return b"%x\r\n%s\r\n" % (len(line), line)


class _Connection(NamedTuple):
    """Where a started watch's lines go."""

    response: web.StreamResponse
    protocol: BaseProtocol
    transport: asyncio.WriteTransport


class ClientWatch:
    """One client's watch: started or refused, then lines until it finishes."""

    def __init__(self, watch_id: int, stream: _Stream) -> None:
        self.id = watch_id
        self._stream = stream
        loop = asyncio.get_running_loop()
        self._started: asyncio.Future[None] = loop.create_future()
        self.finished: asyncio.Future[None] = loop.create_future()
        self._connection: _Connection | None = None  # once the response has started
        self._backlog: deque[bytes] = deque()
        self._flusher: asyncio.Task[None] | None = None
        self.terminated = False
        # What this client's lines become (a metadata-only watch's), if anything:
        # the shared, framed line is then made again for this client alone.
        self.transform: Callable[[bytes], bytes] | None = None

    async def wait_started(self) -> None:
        """Returns once the registry accepted the watch; raises its refusal."""
        await self._started

    def start(self, refusal: StatusError | None = None) -> None:
        if self._started.done():
            return
        if refusal is None:
            self._started.set_result(None)
        else:
            self._started.set_exception(refusal)
            self.finish()

    def attach(
        self,
        response: web.StreamResponse,
        protocol: BaseProtocol,
        transport: asyncio.WriteTransport,
    ) -> None:
        """Write to response from now on (lines that came before go first)."""
        self._connection = _Connection(response, protocol, transport)
        if self._backlog:
            self._flush_later()

    def send(self, line: bytes, framed: bytes) -> None:
        """Send line (framed: the same as a chunk) now, or queue it if the
        connection is not taking more."""
        if self.finished.done():
            return
        if self.transform is not None:
            line = self.transform(line)
            framed = chunk(line)
        connection = self._connection
        if connection is None or self._backlog or connection.protocol.writing_paused:
            self._backlog.append(line)
            if len(self._backlog) > BACKLOG:
                self.terminate()
            elif connection is not None:
                self._flush_later()
            return
        if connection.transport.is_closing():
            self.finish()
            return
        # Straight to the transport, which buffers what it cannot send yet: the
        # response's own write would await a drain, and frame the line again.
        connection.transport.write(framed)

    def _flush_later(self) -> None:
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.create_task(self._flush())

    async def _flush(self) -> None:
        assert self._connection is not None
        response = self._connection.response
        try:
            while self._backlog:
                await response.write(self._backlog.popleft())
        except (ConnectionError, RuntimeError):
            self._backlog.clear()
            self.finish()

    async def drained(self) -> None:
        """Wait until every line queued for the client has been written."""
        if self._flusher is not None:
            await self._flusher

    def terminate(self) -> None:
        """End a watch whose client cannot keep up."""
        self.terminated = True
        self._backlog.clear()
        if self._flusher is not None:
            self._flusher.cancel()
        self.finish()

    def finish(self) -> None:
        if not self.finished.done():
            self.finished.set_result(None)

    def cancel(self) -> None:
        """The client's side is over: stop the registry's watch if still open."""
        self._stream.forget(self.id)
        self.finish()


class _Stream:
    """One Registry/WatchStream and the watches on it."""

    def __init__(self, stub: registry_pb2_grpc.RegistryAsyncStub) -> None:
        self.watches: dict[int, ClientWatch] = {}
        self._outgoing: asyncio.Queue[registry_pb2.WatchStreamRequest | None] = asyncio.Queue()
        self.alive = True
        with telemetry.outside_traces():
            self._call = stub.WatchStream(self._requests())
        self._reader = asyncio.create_task(self._read(), name="registry watch stream")

    async def _requests(self) -> AsyncIterator[registry_pb2.WatchStreamRequest]:
        while (message := await self._outgoing.get()) is not None:
            yield message

    def open(self, watch: ClientWatch, request: registry_pb2.WatchRequest) -> None:
        self.watches[watch.id] = watch
        opened = registry_pb2.OpenWatch(id=watch.id, watch=request)
        self._outgoing.put_nowait(registry_pb2.WatchStreamRequest(open=opened))

    def forget(self, watch_id: int) -> None:
        if self.watches.pop(watch_id, None) is not None and self.alive:
            self._outgoing.put_nowait(registry_pb2.WatchStreamRequest(cancel=watch_id))

    async def _read(self) -> None:
        failure: StatusError = errors.service_unavailable("the registry ended the watch stream", 1)
        try:
            async for message in self._call:
                for frame in message.frames:
                    self._apply(frame)
        except grpc.aio.AioRpcError as e:
            # A stream that broke in transport (it ended as this side wrote:
            # gRPC's INTERNAL, no Status of the registry's) ends its watches as
            # a registry away does: they may retry. A bug's answer stays a 500.
            if e.code() == grpc.StatusCode.INTERNAL and carried_status(e) is None:
                failure = errors.service_unavailable(
                    f"the registry ended the watch stream: {e.details()}", 1
                )
            else:
                failure = status_from_rpc_error(e)
        except asyncio.CancelledError:
            pass
        finally:
            self.alive = False
            for watch in self.watches.values():
                watch.start(failure)
                watch.finish()
            self.watches.clear()

    def _apply(self, frame: registry_pb2.WatchFrame) -> None:
        watches = self.watches
        kind = frame.WhichOneof("frame")
        if kind == "event":
            line = event_line(frame.event)
            framed = chunk(line)
            for watch_id in frame.ids:
                if (watch := watches.get(watch_id)) is not None:
                    watch.send(line, framed)
            return
        for watch_id in frame.ids:
            watch = watches.get(watch_id)
            if watch is None:
                continue
            if kind == "started":
                watch.start()
            elif kind == "refused":
                del watches[watch_id]
                watch.start(StatusError.from_json(frame.refused))
            else:
                del watches[watch_id]
                watch.finish()

    def close(self) -> None:
        self.alive = False
        self._outgoing.put_nowait(None)
        self._call.cancel()


class RegistryWatches:
    """Opens client watches on the current stream, a new one when it broke."""

    def __init__(self, stub: registry_pb2_grpc.RegistryAsyncStub) -> None:
        self._stub = stub
        self._ids = itertools.count(1)
        self._stream: _Stream | None = None

    def open(self, request: registry_pb2.WatchRequest) -> ClientWatch:
        stream = self._stream
        if stream is None or not stream.alive:
            stream = self._stream = _Stream(self._stub)
        watch = ClientWatch(next(self._ids), stream)
        stream.open(watch, request)
        return watch

    def close(self) -> None:
        """End every watch (on shutdown); clients reconnect and resume."""
        if self._stream is not None:
            for watch in list(self._stream.watches.values()):
                watch.finish()
            self._stream.close()
            self._stream = None
