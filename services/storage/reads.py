"""Point reads of many callers folded into one etcd transaction.

Each etcd call from Python costs far more than the read it carries, so single
key reads that arrive while others are in flight wait for the next batch and
go together as the ranges of one read-only Txn. A Txn is linearizable and
starts after every read in it was asked for, so each caller still sees every
write that finished before its read began. At low load a read goes alone, at
once; at most two batches are in flight.

A batch belongs to no single request, so it is sent outside any trace; a
traced (sampled) read goes alone instead, so its trace keeps its etcd span.
"""

from __future__ import annotations

import asyncio
import contextvars

from strata import telemetry
from strata.etcd import Etcd
from strata.proto.etcd.etcdserverpb import rpc_pb2

MAX_BATCH = 64
MAX_IN_FLIGHT = 2


class PointReads:
    def __init__(self, etcd: Etcd) -> None:
        self._etcd = etcd
        self._waiting: list[tuple[bytes, asyncio.Future[rpc_pb2.RangeResponse]]] = []
        self._senders: set[asyncio.Task[None]] = set()

    async def range(self, key: bytes) -> rpc_pb2.RangeResponse:
        """The key's current value (and the revision read at), as a Range of it would."""
        if telemetry.sampled():
            return await self._etcd.range(key)
        future: asyncio.Future[rpc_pb2.RangeResponse] = asyncio.get_running_loop().create_future()
        self._waiting.append((key, future))
        if len(self._senders) < MAX_IN_FLIGHT:
            sender = asyncio.create_task(self._send(), context=contextvars.Context())
            self._senders.add(sender)
            sender.add_done_callback(self._senders.discard)
        return await future

    async def _send(self) -> None:
        while self._waiting:
            batch, self._waiting = self._waiting[:MAX_BATCH], self._waiting[MAX_BATCH:]
            try:
                responses = await self._read(batch)
            except Exception as e:
                for _, future in batch:
                    if not future.done():
                        future.set_exception(e)
                continue
            for (_, future), response in zip(batch, responses, strict=True):
                if not future.done():
                    future.set_result(response)

    async def _read(
        self, batch: list[tuple[bytes, asyncio.Future[rpc_pb2.RangeResponse]]]
    ) -> list[rpc_pb2.RangeResponse]:
        if len(batch) == 1:
            return [await self._etcd.range(batch[0][0])]
        response = await self._etcd.txn(
            rpc_pb2.TxnRequest(
                success=[
                    rpc_pb2.RequestOp(request_range=rpc_pb2.RangeRequest(key=key))
                    for key, _ in batch
                ]
            ),
            read_only=True,
        )
        ranges = []
        for op in response.responses:
            answer = op.response_range
            answer.header.CopyFrom(response.header)
            ranges.append(answer)
        return ranges
