"""Storage/WatchStream for any implementation of the storage contract.

One task per open watch drains that watch's encoded events into a shared
outbox. The writer turns what has piled up into frames: one per distinct
event object, carrying the ids of every watch that yielded that very object,
so an implementation that encodes an event once for all its watchers (the
cacher) has it sent once. A watch's frames stay in its own order.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Callable

from strata import telemetry
from strata.proto.storage.v1 import storage_pb2
from strata.storage import _wire_bytes as wire
from strata.storage._batching import BATCH_BYTES
from strata.storage._errors import StorageError
from strata.storage._wire import failure

_log = telemetry.get_logger("strata.storage.watch_stream")
# What a watch that ended cleanly leaves in the outbox (one object: such ends group).
_ENDED = b""
Item = bytes | storage_pb2.Failure


def frames(items: list[tuple[int, Item]]) -> list[bytes]:
    """Encoded WatchFrames for (watch id, item) pairs in the order they came: an
    item joins the frame of the same object unless its watch already has a later
    frame, so each watch sees its items in order."""
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
    encoded = []
    for item, ids in grouped:
        if isinstance(item, storage_pb2.Failure):
            encoded.append(wire.watch_frame(ids, ended=True, failure=item.SerializeToString()))
        elif item is _ENDED:
            encoded.append(wire.watch_frame(ids, ended=True))
        else:
            encoded.append(wire.watch_frame(ids, item))
    return encoded


def _batched(encoded: list[bytes]) -> list[bytes]:
    """WatchFrames messages of at most about BATCH_BYTES each."""
    out: list[bytes] = []
    batch: list[bytes] = []
    size = 0
    for frame in encoded:
        if batch and size + len(frame) > BATCH_BYTES:
            out.append(wire.repeated(batch))
            batch, size = [], 0
        batch.append(frame)
        size += len(frame)
    if batch:
        out.append(wire.repeated(batch))
    return out


async def serve_watch_stream(
    requests: AsyncIterator[storage_pb2.WatchStreamRequest],
    watch: Callable[[storage_pb2.WatchRequest], AsyncGenerator[bytes, None]],
) -> AsyncGenerator[bytes, None]:
    """WatchFrames bytes for the watches requests open; watch gives one watch's
    encoded events. Ends when the client stops sending."""
    outbox: list[tuple[int, Item]] = []
    ready = asyncio.Event()
    running: dict[int, asyncio.Task[None]] = {}
    reading = True

    def put(watch_id: int, item: Item) -> None:
        outbox.append((watch_id, item))
        ready.set()

    async def run(watch_id: int, request: storage_pb2.WatchRequest) -> None:
        events = watch(request)
        try:
            async for data in events:
                put(watch_id, data)
            put(watch_id, _ENDED)
        except StorageError as e:
            put(watch_id, failure(e))
        except Exception as e:  # a bug must still end the watch, or its client waits forever
            _log.exception("watch failed", key=request.key)
            put(watch_id, failure(StorageError(request.key, f"{type(e).__name__}: {e}")))
        finally:
            await events.aclose()
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
            ready.set()

    reader = asyncio.create_task(read())
    try:
        while reading or outbox:
            await ready.wait()
            ready.clear()
            items, outbox = outbox, []
            for message in _batched(frames(items)):
                yield message
    finally:
        reader.cancel()
        for task in list(running.values()):
            task.cancel()
