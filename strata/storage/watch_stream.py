"""Storage/WatchStream for any implementation of the storage contract.

Every watch on a stream puts its encoded events into one shared outbox through
a WatchSink: an implementation that fans events out itself (the cacher) puts
them there straight from its dispatch, with no task per watch in between, and
one event for many of the stream's watches in one put; any other runs its
watch generator into the sink. The writer turns what has piled up into frames:
one per distinct event object, carrying the ids of every watch that put that
very object, so an event encoded once for all its watchers is sent once. A
watch's frames stay in its own order.

A stream whose reader falls behind is judged as kube's cacher judges a slow
watcher: past BEHIND_PER_WATCH live events per open watch waiting, a watch
that sends more is told to end (its client resumes from its last event).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Sequence
from typing import Protocol

from strata import protowire, telemetry
from strata.pipeline import BATCH_BYTES
from strata.proto.storage.v1 import storage_pb2
from strata.storage import wire_bytes as wire
from strata.storage._errors import StorageError
from strata.storage._wire import failure

_log = telemetry.get_logger("strata.storage.watch_stream")
# What a watch that ended cleanly leaves in the outbox (one object: such ends group).
_ENDED = b""
Item = bytes | storage_pb2.Failure
# What was put: one watch's item, or one live event of several watches (a fan-out).
Entry = tuple[int | tuple[int, ...], Item]
# Live events per open watch a stream may have waiting for its reader before
# the watches that send more are ended.
BEHIND_PER_WATCH = 2048


def _frame(item: Item, ids: list[int]) -> bytes:
    if isinstance(item, storage_pb2.Failure):
        return wire.watch_frame(ids, ended=True, failure=item.SerializeToString())
    if item is _ENDED:
        return wire.watch_frame(ids, ended=True)
    return wire.watch_frame(ids, item)


def _pairs(entries: Sequence[Entry]) -> list[tuple[int, Item]]:
    """(watch id, item) for every watch of every entry, in order."""
    pairs: list[tuple[int, Item]] = []
    for watches, item in entries:
        if isinstance(watches, tuple):
            pairs += [(watch, item) for watch in watches]
        else:
            pairs.append((watches, item))
    return pairs


def frames(entries: Sequence[Entry]) -> list[bytes]:
    """Encoded WatchFrames for what was put, in the order it came: an item joins
    the frame of the same object unless its watch already has a later frame, so
    each watch sees its items in order."""
    if len(entries) == 1:  # one fan-out's event since the writer last ran
        watches, only = entries[0]
        return [_frame(only, list(watches) if isinstance(watches, tuple) else [watches])]
    items = _pairs(entries)
    if items:
        # A fan-out's usual batch: one event for many watches, each once.
        first = items[0][1]
        if all(item is first for _, item in items):
            ids = [watch for watch, _ in items]
            if len(set(ids)) == len(ids):
                return [_frame(first, ids)]
    grouped: list[tuple[Item, list[int]]] = []
    frame_of: dict[int, int] = {}  # id(item) -> index of its newest frame
    last: dict[int, int] = {}  # watch id -> index of its newest frame
    for watch, item in items:
        at = frame_of.get(id(item))
        if at is None or last.get(watch, -1) >= at:
            at = len(grouped)
            grouped.append((item, []))
            frame_of[id(item)] = at
        grouped[at][1].append(watch)
        last[watch] = at
    return [_frame(item, ids) for item, ids in grouped]


def _batched(encoded: list[bytes]) -> list[bytes]:
    """WatchFrames messages of at most about BATCH_BYTES each."""
    out: list[bytes] = []
    batch: list[bytes] = []
    size = 0
    for frame in encoded:
        if batch and size + len(frame) > BATCH_BYTES:
            out.append(protowire.repeated(batch))
            batch, size = [], 0
        batch.append(frame)
        size += len(frame)
    if batch:
        out.append(protowire.repeated(batch))
    return out


class Outbox:
    """What a stream's watches have put and its writer has not taken yet."""

    def __init__(self) -> None:
        self.items: list[Entry] = []
        self.ready = asyncio.Event()
        self.watches = 0  # open watches, for the allowance of live events waiting
        self._live = 0  # live events put since the writer last took the items

    def put(self, watch_id: int, item: Item) -> None:
        self.items.append((watch_id, item))
        self.ready.set()

    def put_live(self, watch_id: int, data: bytes) -> bool:
        # put() written out: a fan-out calls this once per watcher and event.
        self._live += 1
        self.items.append((watch_id, data))
        self.ready.set()
        return self._live <= BEHIND_PER_WATCH * (self.watches or 1)

    def put_live_many(self, watch_ids: tuple[int, ...], data: bytes) -> bool:
        """put_live for several watches at once: False when the stream is too far
        behind, and all of them should end."""
        self._live += len(watch_ids)
        self.items.append((watch_ids, data))
        self.ready.set()
        return self._live <= BEHIND_PER_WATCH * (self.watches or 1)

    def take(self) -> list[Entry]:
        items, self.items, self._live = self.items, [], 0
        self.ready.clear()
        return items


class Sink(Protocol):
    """Where a watch puts its encoded events."""

    def initial(self, data: bytes) -> None:
        """An event of the initial state or the replay (never refused)."""

    def send(self, data: bytes) -> bool:
        """A live event; False when the watch must end, being too far behind."""


class WatchSink:
    """One watch's way into its stream (a Sink). A fan-out may put one event for
    many watches of one outbox with Outbox.put_live_many."""

    __slots__ = ("id", "outbox")

    def __init__(self, outbox: Outbox, watch_id: int) -> None:
        self.outbox, self.id = outbox, watch_id

    def initial(self, data: bytes) -> None:
        """An event of the watch's initial state or replay (never refused)."""
        self.outbox.put(self.id, data)

    def send(self, data: bytes) -> bool:
        """A live event; False once the stream's reader is too far behind, and the
        watch should end."""
        return self.outbox.put_live(self.id, data)


# Runs one watch into its sink until it ends; a StorageError is its failure.
WatchInto = Callable[[storage_pb2.WatchRequest, WatchSink], Awaitable[None]]


async def encoded(
    events: AsyncGenerator[storage_pb2.WatchEvent, None],
) -> AsyncGenerator[bytes, None]:
    """A watch's events as encoded WatchEvents."""
    try:
        async for event in events:
            yield event.SerializeToString()
    finally:
        await events.aclose()


async def pump(events: AsyncGenerator[bytes, None], sink: Sink) -> None:
    """A watch generator's events into sink, until either is done."""
    try:
        async for data in events:
            if not sink.send(data):
                return
    finally:
        await events.aclose()


async def serve_watch_stream(
    requests: AsyncIterator[storage_pb2.WatchStreamRequest], watch: WatchInto
) -> AsyncGenerator[bytes, None]:
    """WatchFrames bytes for the watches requests open, each run by watch. Ends
    when the client stops sending."""
    outbox = Outbox()
    running: dict[int, asyncio.Task[None]] = {}
    reading = True

    async def run(watch_id: int, request: storage_pb2.WatchRequest) -> None:
        outbox.watches += 1
        try:
            await watch(request, WatchSink(outbox, watch_id))
            outbox.put(watch_id, _ENDED)
        except StorageError as e:
            outbox.put(watch_id, failure(e))
        except Exception as e:  # a bug must still end the watch, or its client waits forever
            _log.exception("watch failed", key=request.key)
            outbox.put(watch_id, failure(StorageError(request.key, f"{type(e).__name__}: {e}")))
        finally:
            outbox.watches -= 1
            if running.get(watch_id) is asyncio.current_task():
                del running[watch_id]

    async def read() -> None:
        nonlocal reading
        try:
            async for message in requests:
                if message.WhichOneof("request") == "open":
                    watch_id = message.open.id
                    if (old := running.pop(watch_id, None)) is not None:
                        old.cancel()
                    running[watch_id] = asyncio.create_task(run(watch_id, message.open.watch))
                elif (task := running.pop(message.cancel, None)) is not None:
                    task.cancel()
        finally:
            reading = False
            outbox.ready.set()

    reader = asyncio.create_task(read())
    try:
        while reading or outbox.items:
            await outbox.ready.wait()
            for message in _batched(frames(outbox.take())):
                yield message
    finally:
        reader.cancel()
        for task in list(running.values()):
            task.cancel()
