"""Pipeline batching: everything queued goes in one batch, up to a size cap."""

from __future__ import annotations

import asyncio

from strata.pipeline import BATCH_BYTES, batches
from strata.proto.storage.v1 import storage_pb2


def _call(size: int) -> storage_pb2.Call:
    return storage_pb2.Call(create=storage_pb2.CreateRequest(value=b"x" * size))


async def test_queued_calls_go_together_and_none_ends() -> None:
    queue: asyncio.Queue[storage_pb2.Call | None] = asyncio.Queue()
    for i in range(5):
        queue.put_nowait(storage_pb2.Call(id=i))
    queue.put_nowait(None)
    got = [batch async for batch in batches(queue, storage_pb2.Call.ByteSize)]
    assert [[c.id for c in batch] for batch in got] == [[0, 1, 2, 3, 4]]


async def test_batches_stop_at_the_size_cap_without_losing_a_call() -> None:
    queue: asyncio.Queue[storage_pb2.Call | None] = asyncio.Queue()
    big = BATCH_BYTES // 3
    for _ in range(5):
        queue.put_nowait(_call(big))
    queue.put_nowait(_call(BATCH_BYTES * 2))  # larger than a batch: goes alone
    queue.put_nowait(None)
    sizes = [len(b) async for b in batches(queue, storage_pb2.Call.ByteSize)]
    assert sizes == [2, 2, 1, 1] and sum(sizes) == 6
