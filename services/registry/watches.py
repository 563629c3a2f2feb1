"""Registry/WatchStream: all of a gateway's watches on one stream, carried on
one storage WatchStream under the same ids.

The storage sends an event once for every watch that gets it; here it is
turned into its Kubernetes form once per resource and rendering, and sent on
once with the ids of all those watches, so a thousand watchers of one
namespace cost one message per event on each hop, not a thousand.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass

from services.registry.generic.options import Rendering
from services.registry.generic.storage_errors import status_of
from services.registry.generic.store import Store
from services.registry.generic.watching import WatchItem
from strata import telemetry
from strata.api.errors import StatusError
from strata.proto.registry.v1 import registry_pb2
from strata.proto.storage.v1 import storage_pb2
from strata.storage import (
    GrpcStorage,
    StorageError,
    WatchOptions,
    WatchStreamCall,
    from_failure,
)

Frame = registry_pb2.WatchFrame
# How long a stream whose storage stream could not connect refuses the
# watches opened on it before it ends (the Retry-After its refusals carry).
REFUSING_SECONDS = 1.0
log = telemetry.get_logger("strata.registry.watches")


@dataclass(frozen=True)
class Route:
    """How a watch's events are rendered; watches with equal routes share frames."""

    store: Store
    rendering: Rendering


# A watch request's route, storage key and storage watch options.
Opened = tuple[Route, str, WatchOptions]
Target = Callable[[registry_pb2.WatchRequest], Awaitable[Opened]]


def _event_frame(ids: list[int], item: WatchItem) -> Frame:
    return Frame(ids=ids, event=registry_pb2.WatchEvent(type=item.type, object=item.object))


class _Session:
    """One gateway stream: its open watches and the frames waiting to go."""

    def __init__(self, storage: WatchStreamCall, target: Target) -> None:
        self.storage = storage
        self._target = target
        # Whether the storage stream connected: a watch is started only on a
        # stream that did, and refused with the storage's error (503 when it is
        # away) on one that did not, so a client backs off instead of seeing
        # its watch end at once and opening it again.
        self._connected = asyncio.ensure_future(storage.connected())
        self.routes: dict[int, Route] = {}
        # One instance per distinct route, so relaying groups watches by identity.
        self._interned: dict[Route, Route] = {}
        self.outbox: list[Frame] = []
        self.ready = asyncio.Event()

    def put(self, frame: Frame) -> None:
        self.outbox.append(frame)
        self.ready.set()

    async def open(self, opened: registry_pb2.OpenWatch) -> None:
        try:
            route, key, options = await self._target(opened.watch)
        except StatusError as e:
            self.put(Frame(ids=[opened.id], refused=e.to_json()))
            return
        if not await self.connected():
            refusal = status_of(self.failure(), route.store.resource)
            self.put(Frame(ids=[opened.id], refused=refusal.to_json()))
            return
        self.routes[opened.id] = self._interned.setdefault(route, route)
        self.storage.open(opened.id, key, options)
        self.put(Frame(ids=[opened.id], started=True))

    def cancel(self, watch_id: int) -> None:
        if self.routes.pop(watch_id, None) is not None:
            self.storage.cancel(watch_id)

    def relay(self, frame: storage_pb2.WatchFrame) -> None:
        for route, ids in self._grouped(list(frame.ids)):
            if frame.HasField("event"):
                self.put(_event_frame(ids, route.store.watch_item(frame.event, route.rendering)))
            if frame.ended:
                if frame.HasField("failure"):
                    error = route.store.watch_error(from_failure(frame.failure))
                    self.put(_event_frame(ids, error))
                self.put(Frame(ids=ids, ended=True))
                for watch_id in ids:
                    del self.routes[watch_id]

    def _grouped(self, ids: list[int]) -> Iterable[tuple[Route, list[int]]]:
        """The open watches among ids, grouped by route."""
        routed = list(map(self.routes.get, ids))
        first = routed[0] if routed else None
        # A fan-out's usual frame: every watch on one (interned) route.
        if first is not None and routed.count(first) == len(routed):
            return [(first, ids)]
        groups: dict[int, tuple[Route, list[int]]] = {}
        for watch_id, route in zip(ids, routed, strict=True):
            if route is not None:
                group = groups.get(id(route))
                if group is None:
                    group = groups[id(route)] = (route, [])
                group[1].append(watch_id)
        return groups.values()

    async def connected(self) -> bool:
        """Whether the storage stream connected (waits until it has or failed)."""
        try:
            await asyncio.shield(self._connected)
        except StorageError:
            return False
        return True

    def failure(self) -> StorageError:
        """Why the storage stream did not connect (once connected() said so)."""
        failure = self._connected.exception()
        assert isinstance(failure, StorageError)
        return failure

    def close(self) -> None:
        self._connected.cancel()
        self.storage.close()

    def end_all(self) -> None:
        """End every open watch cleanly: its client resumes from its last event."""
        if self.routes:
            self.put(Frame(ids=list(self.routes), ended=True))
            self.routes.clear()


async def serve_watches(
    requests: AsyncIterator[registry_pb2.WatchStreamRequest],
    storage: GrpcStorage,
    target: Target,
) -> AsyncGenerator[registry_pb2.WatchFrames, None]:
    """WatchFrames for the watches requests open (target says where each one goes,
    or raises its refusal), until the gateway stops sending or the storage stream
    breaks (then every watch ends and the gateway opens a new stream)."""

    session = _Session(storage.watch_stream(), target)
    open_ = True

    async def from_gateway() -> None:
        nonlocal open_
        try:
            async for message in requests:
                if message.WhichOneof("request") == "open":
                    await session.open(message.open)
                else:
                    session.cancel(message.cancel)
        finally:
            open_ = False
            session.ready.set()

    async def from_storage() -> None:
        nonlocal open_
        try:
            if not await session.connected():
                # Storage is away: the watches opened meanwhile are refused
                # (503) for a while, then the stream ends and the gateway opens
                # a new one for the next watch.
                log.warning("storage watch stream broke", error=str(session.failure()))
                await asyncio.sleep(REFUSING_SECONDS)
                return
            async for frames in session.storage.frames():
                for frame in frames:
                    session.relay(frame)
        except StorageError as e:
            log.warning("storage watch stream broke", error=str(e))
        finally:
            session.end_all()
            open_ = False
            session.ready.set()

    tasks = [asyncio.create_task(from_gateway()), asyncio.create_task(from_storage())]
    try:
        while open_ or session.outbox:
            await session.ready.wait()
            session.ready.clear()
            frames, session.outbox = session.outbox, []
            if frames:
                yield registry_pb2.WatchFrames(frames=frames)
    finally:
        for task in tasks:
            task.cancel()
        session.close()
