"""The etcd client: KV, Watch, Lease and Maintenance.Status over one channel."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import grpc
from opentelemetry import trace

from strata.proto.etcd.etcdserverpb import rpc_pb2, rpc_pb2_grpc

_tracer = trace.get_tracer("strata.etcd")


def prefix_end(prefix: bytes) -> bytes:
    """The range_end that covers every key starting with prefix."""
    end = bytearray(prefix)
    for i in range(len(end) - 1, -1, -1):
        if end[i] < 0xFF:
            end[i] += 1
            return bytes(end[: i + 1])
    return b"\0"


class Etcd:
    """One etcd endpoint ("host:port"), plain gRPC without interceptors."""

    def __init__(self, endpoint: str) -> None:
        self.endpoint = endpoint
        self._channel = grpc.aio.insecure_channel(
            endpoint, options=[("grpc.max_receive_message_length", 256 * 1024 * 1024)]
        )
        self._kv = rpc_pb2_grpc.KVStub(self._channel)
        self._watch = rpc_pb2_grpc.WatchStub(self._channel)
        self._lease = rpc_pb2_grpc.LeaseStub(self._channel)
        self._maintenance = rpc_pb2_grpc.MaintenanceStub(self._channel)

    async def close(self) -> None:
        await self._channel.close()

    def _span(self, method: str, key: bytes = b"") -> trace.Span:
        span = _tracer.start_span(f"etcd {method}", kind=trace.SpanKind.CLIENT)
        if span.is_recording():
            span.set_attribute("db.system", "etcd")
            span.set_attribute("db.operation", method)
            span.set_attribute("rpc.method", method)
            if key:
                span.set_attribute("etcd.key", key.decode(errors="replace"))
        return span

    async def range(
        self,
        key: bytes,
        range_end: bytes = b"",
        *,
        revision: int = 0,
        limit: int = 0,
        count_only: bool = False,
        serializable: bool = False,
    ) -> rpc_pb2.RangeResponse:
        request = rpc_pb2.RangeRequest(
            key=key,
            range_end=range_end,
            revision=revision,
            limit=limit,
            count_only=count_only,
            serializable=serializable,
        )
        with trace.use_span(self._span("Range", key), end_on_exit=True):
            return await self._kv.Range(request)

    async def put(self, key: bytes, value: bytes, *, lease: int = 0) -> rpc_pb2.PutResponse:
        with trace.use_span(self._span("Put", key), end_on_exit=True):
            return await self._kv.Put(rpc_pb2.PutRequest(key=key, value=value, lease=lease))

    async def delete_range(
        self, key: bytes, range_end: bytes = b"", *, prev_kv: bool = False
    ) -> rpc_pb2.DeleteRangeResponse:
        request = rpc_pb2.DeleteRangeRequest(key=key, range_end=range_end, prev_kv=prev_kv)
        with trace.use_span(self._span("DeleteRange", key), end_on_exit=True):
            return await self._kv.DeleteRange(request)

    async def txn(self, request: rpc_pb2.TxnRequest) -> rpc_pb2.TxnResponse:
        key = request.compare[0].key if request.compare else b""
        with trace.use_span(self._span("Txn", key), end_on_exit=True):
            return await self._kv.Txn(request)

    async def compact(self, revision: int, *, physical: bool = True) -> None:
        with trace.use_span(self._span("Compact"), end_on_exit=True):
            await self._kv.Compact(rpc_pb2.CompactionRequest(revision=revision, physical=physical))

    async def lease_grant(self, ttl_seconds: int) -> int:
        with trace.use_span(self._span("LeaseGrant"), end_on_exit=True):
            response = await self._lease.LeaseGrant(rpc_pb2.LeaseGrantRequest(TTL=ttl_seconds))
        return response.ID

    async def status(self) -> rpc_pb2.StatusResponse:
        with trace.use_span(self._span("Status"), end_on_exit=True):
            return await self._maintenance.Status(rpc_pb2.StatusRequest())

    async def watch(
        self,
        key: bytes,
        range_end: bytes = b"",
        *,
        start_revision: int = 0,
        prev_kv: bool = False,
        progress_interval: float = 0,
    ) -> AsyncIterator[rpc_pb2.WatchResponse]:
        """Responses of one etcd watch, the created confirmation excluded.

        With progress_interval, etcd is asked for a progress notification (a
        response without events carrying the revision reached) that often.
        A response with compact_revision set (or canceled) ends the stream; the
        caller decides what that means.
        """
        create = rpc_pb2.WatchCreateRequest(
            key=key, range_end=range_end, start_revision=start_revision, prev_kv=prev_kv
        )
        requests: asyncio.Queue[rpc_pb2.WatchRequest | None] = asyncio.Queue()
        await requests.put(rpc_pb2.WatchRequest(create_request=create))

        async def outgoing() -> AsyncIterator[rpc_pb2.WatchRequest]:
            while (request := await requests.get()) is not None:
                yield request

        async def ask_for_progress() -> None:
            while True:
                await asyncio.sleep(progress_interval)
                progress = rpc_pb2.WatchProgressRequest()
                await requests.put(rpc_pb2.WatchRequest(progress_request=progress))

        with trace.use_span(self._span("Watch", key), end_on_exit=True):
            call = self._watch.Watch(outgoing())
        ticker = asyncio.create_task(ask_for_progress()) if progress_interval > 0 else None
        try:
            async for response in call:
                if response.created and not response.events and not response.canceled:
                    continue
                yield response
                if response.canceled or response.compact_revision:
                    return
        finally:
            if ticker is not None:
                ticker.cancel()
            await requests.put(None)
            call.cancel()
