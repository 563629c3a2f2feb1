"""The client side of strata.storage.v1.Storage/Pipeline: many storage calls
on one stream, written in batches as they queue up and matched to their
results by id.

A stream that breaks fails every call still waiting on it with Unavailable
(a write among them may or may not have been applied, exactly as with a
unary call whose connection broke); the next call opens a new stream.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator

import grpc

from strata import telemetry
from strata.proto.storage.v1 import storage_pb2, storage_pb2_grpc
from strata.storage._batching import batches
from strata.storage._errors import Unavailable
from strata.storage._wire import restore


class _Stream:
    def __init__(self, stub: storage_pb2_grpc.StorageAsyncStub) -> None:
        self.pending: dict[int, asyncio.Future[storage_pb2.Result]] = {}
        self.outgoing: asyncio.Queue[storage_pb2.Call | None] = asyncio.Queue()
        self.alive = True
        with telemetry.outside_traces():
            self.call = stub.Pipeline(self._calls())
        self.reader = asyncio.create_task(self._read(), name="storage pipeline reader")

    async def _calls(self) -> AsyncIterator[storage_pb2.Calls]:
        async for batch in batches(self.outgoing, storage_pb2.Call.ByteSize):
            yield storage_pb2.Calls(calls=batch)

    async def _read(self) -> None:
        error: Exception = Unavailable("", "the storage pipeline closed")
        try:
            async for results in self.call:
                for result in results.results:
                    future = self.pending.pop(result.id, None)
                    if future is not None and not future.done():
                        future.set_result(result)
        except grpc.aio.AioRpcError as e:
            restored = restore(e)
            error = restored if isinstance(restored, Unavailable) else Unavailable("", str(e))
        except asyncio.CancelledError:
            pass
        finally:
            self.alive = False
            for future in self.pending.values():
                if not future.done():
                    future.set_exception(error)
            self.pending.clear()

    def close(self) -> None:
        self.alive = False
        self.outgoing.put_nowait(None)
        self.call.cancel()


class PipelineClient:
    def __init__(self, channel: grpc.aio.Channel) -> None:
        self._stub = storage_pb2_grpc.StorageStub(channel)
        self._ids = itertools.count(1)
        self._stream: _Stream | None = None

    async def call(self, call: storage_pb2.Call) -> storage_pb2.Result:
        stream = self._stream
        if stream is None or not stream.alive:
            stream = self._stream = _Stream(self._stub)
        call.id = next(self._ids)
        future: asyncio.Future[storage_pb2.Result] = asyncio.get_running_loop().create_future()
        stream.pending[call.id] = future
        stream.outgoing.put_nowait(call)
        try:
            return await future
        finally:
            stream.pending.pop(call.id, None)

    async def close(self) -> None:
        if self._stream is not None:
            self._stream.close()
            await asyncio.gather(self._stream.reader, return_exceptions=True)
            self._stream = None
