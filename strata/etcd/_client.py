"""The etcd client: KV, Watch, Lease and Maintenance.Status, one channel per endpoint."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import grpc
from opentelemetry import trace

from strata.proto.etcd.etcdserverpb import rpc_pb2, rpc_pb2_grpc

_tracer = trace.get_tracer("strata.etcd")
# What an etcd call outside a sampled trace runs in: nothing, reused.
_NO_SPAN = contextlib.nullcontext()
T = TypeVar("T")


def prefix_end(prefix: bytes) -> bytes:
    """The range_end that covers every key starting with prefix."""
    end = bytearray(prefix)
    for i in range(len(end) - 1, -1, -1):
        if end[i] < 0xFF:
            end[i] += 1
            return bytes(end[: i + 1])
    return b"\0"


@dataclass(frozen=True, kw_only=True)
class EtcdTLS:
    """TLS to etcd: the CA that signed its serving certificate, and optionally
    this client's certificate and key (for etcd's --client-cert-auth)."""

    ca_file: Path | None = None
    cert_file: Path | None = None
    key_file: Path | None = None

    def credentials(self) -> grpc.ChannelCredentials:
        def read(path: Path | None) -> bytes | None:
            return path.read_bytes() if path is not None else None

        return grpc.ssl_channel_credentials(
            root_certificates=read(self.ca_file),
            private_key=read(self.key_file),
            certificate_chain=read(self.cert_file),
        )


DEFAULT_REQUEST_TIMEOUT_SECONDS = 10.0
_PROGRESS_REQUEST = rpc_pb2.WatchRequest(progress_request=rpc_pb2.WatchProgressRequest())
_OPTIONS = [
    ("grpc.max_receive_message_length", 256 * 1024 * 1024),
    # Notice a dead connection within ~40s even when idle; etcd permits pings every 5s.
    ("grpc.keepalive_time_ms", 30_000),
    ("grpc.keepalive_timeout_ms", 10_000),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.max_pings_without_data", 0),
    # etcd that restarted is reached again within a couple of seconds (gRPC's
    # own reconnect backoff grows to two minutes).
    ("grpc.initial_reconnect_backoff_ms", 200),
    ("grpc.min_reconnect_backoff_ms", 200),
    ("grpc.max_reconnect_backoff_ms", 2000),
]


class _Endpoint:
    def __init__(self, address: str, tls: EtcdTLS | None) -> None:
        scheme, _, rest = address.rpartition("://")
        self.address = rest
        if scheme == "https" and tls is None:
            tls = EtcdTLS()
        if tls is not None:
            self.channel = grpc.aio.secure_channel(rest, tls.credentials(), options=_OPTIONS)
        else:
            self.channel = grpc.aio.insecure_channel(rest, options=_OPTIONS)
        self.kv = rpc_pb2_grpc.KVStub(self.channel)
        self.watch = rpc_pb2_grpc.WatchStub(self.channel)
        self.lease = rpc_pb2_grpc.LeaseStub(self.channel)
        self.maintenance = rpc_pb2_grpc.MaintenanceStub(self.channel)


class Etcd:
    """A client for one etcd cluster, given as one or more endpoints
    ("host:port", "http://host:port" or "https://host:port", comma-separated).

    Every unary call has a deadline, so an unreachable etcd is an error, never a
    hang. When an endpoint is unavailable the client moves to the next one;
    reads are retried there at once, writes are not (they may have been
    applied) and fail for the caller to decide.
    """

    def __init__(
        self,
        endpoints: str | Sequence[str],
        *,
        tls: EtcdTLS | None = None,
        request_timeout: float = DEFAULT_REQUEST_TIMEOUT_SECONDS,
    ) -> None:
        listed = endpoints.split(",") if isinstance(endpoints, str) else list(endpoints)
        listed = [e.strip() for e in listed if e.strip()]
        if not listed:
            raise ValueError("no etcd endpoint given")
        self.endpoint = ",".join(listed)
        self._endpoints = [_Endpoint(e, tls) for e in listed]
        self._current = 0
        self._timeout = request_timeout
        # The request queues of the open watches that want progress notifications.
        self._progress_wanted: set[asyncio.Queue[rpc_pb2.WatchRequest | None]] = set()

    @property
    def _active(self) -> _Endpoint:
        return self._endpoints[self._current]

    def _fail_over(self) -> None:
        self._current = (self._current + 1) % len(self._endpoints)

    async def _read(self, method: str, key: bytes, call: Callable[[_Endpoint], Awaitable[T]]) -> T:
        """A read, tried on each endpoint in turn while they are unavailable."""
        with self._span(method, key):
            for attempt in range(len(self._endpoints)):
                try:
                    return await call(self._active)
                except grpc.aio.AioRpcError as e:
                    last = attempt + 1 == len(self._endpoints)
                    if e.code() != grpc.StatusCode.UNAVAILABLE or last:
                        raise
                    self._fail_over()
        raise AssertionError("unreachable")

    async def _write(self, method: str, key: bytes, call: Callable[[_Endpoint], Awaitable[T]]) -> T:
        """A write, on the current endpoint only (it may have been applied)."""
        with self._span(method, key):
            try:
                return await call(self._active)
            except grpc.aio.AioRpcError as e:
                if e.code() == grpc.StatusCode.UNAVAILABLE:
                    self._fail_over()
                raise

    async def close(self) -> None:
        for endpoint in self._endpoints:
            await endpoint.channel.close()

    def _span(self, method: str, key: bytes = b"") -> AbstractContextManager[object]:
        """A CLIENT span for one etcd call, inside a sampled trace only: an etcd call
        outside any trace would otherwise start a root span of its own."""
        parent = trace.get_current_span()
        if not parent.get_span_context().trace_flags.sampled:
            return _NO_SPAN
        span = _tracer.start_span(f"etcd {method}", kind=trace.SpanKind.CLIENT)
        if span.is_recording():
            span.set_attribute("db.system", "etcd")
            span.set_attribute("db.operation", method)
            span.set_attribute("rpc.method", method)
            if key:
                span.set_attribute("etcd.key", key.decode(errors="replace"))
        return trace.use_span(span, end_on_exit=True)

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
        return await self._read("Range", key, lambda e: e.kv.Range(request, timeout=self._timeout))

    async def put(self, key: bytes, value: bytes, *, lease: int = 0) -> rpc_pb2.PutResponse:
        request = rpc_pb2.PutRequest(key=key, value=value, lease=lease)
        return await self._write("Put", key, lambda e: e.kv.Put(request, timeout=self._timeout))

    async def delete_range(
        self, key: bytes, range_end: bytes = b"", *, prev_kv: bool = False
    ) -> rpc_pb2.DeleteRangeResponse:
        request = rpc_pb2.DeleteRangeRequest(key=key, range_end=range_end, prev_kv=prev_kv)
        return await self._write(
            "DeleteRange", key, lambda e: e.kv.DeleteRange(request, timeout=self._timeout)
        )

    async def txn(
        self, request: rpc_pb2.TxnRequest, *, read_only: bool = False
    ) -> rpc_pb2.TxnResponse:
        """A transaction; read_only ones (ranges only) are retried on another endpoint."""
        key = request.compare[0].key if request.compare else b""
        send = self._read if read_only else self._write
        return await send("Txn", key, lambda e: e.kv.Txn(request, timeout=self._timeout))

    async def compact(self, revision: int, *, physical: bool = True) -> None:
        request = rpc_pb2.CompactionRequest(revision=revision, physical=physical)
        await self._write("Compact", b"", lambda e: e.kv.Compact(request, timeout=self._timeout))

    async def lease_grant(self, ttl_seconds: int) -> int:
        request = rpc_pb2.LeaseGrantRequest(TTL=ttl_seconds)
        response = await self._write(
            "LeaseGrant", b"", lambda e: e.lease.LeaseGrant(request, timeout=self._timeout)
        )
        return response.ID

    async def lease_time_to_live(self, lease: int) -> rpc_pb2.LeaseTimeToLiveResponse:
        """What etcd says of a lease: the TTL it was granted and what is left."""
        request = rpc_pb2.LeaseTimeToLiveRequest(ID=lease)
        return await self._read(
            "LeaseTimeToLive",
            b"",
            lambda e: e.lease.LeaseTimeToLive(request, timeout=self._timeout),
        )

    async def status(self) -> rpc_pb2.StatusResponse:
        return await self._read(
            "Status",
            b"",
            lambda e: e.maintenance.Status(rpc_pb2.StatusRequest(), timeout=self._timeout),
        )

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
        response without events carrying the revision reached) that often, and
        whenever request_progress is called.
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
                requests.put_nowait(_PROGRESS_REQUEST)

        endpoint = self._active
        with self._span("Watch", key):
            call = endpoint.watch.Watch(outgoing())
        ticker = None
        if progress_interval > 0:
            ticker = asyncio.create_task(ask_for_progress())
            self._progress_wanted.add(requests)
        try:
            async for response in self._failing_over(call):
                if response.created and not response.events and not response.canceled:
                    continue
                yield response
                if response.canceled or response.compact_revision:
                    return
        finally:
            if ticker is not None:
                ticker.cancel()
            self._progress_wanted.discard(requests)
            await requests.put(None)
            call.cancel()

    def request_progress(self) -> None:
        """Ask etcd for a progress notification on every open watch that wants
        them, now (etcd answers once the watch has caught up)."""
        for requests in self._progress_wanted:
            requests.put_nowait(_PROGRESS_REQUEST)

    async def _failing_over(
        self, call: grpc.aio.StreamStreamCall[rpc_pb2.WatchRequest, rpc_pb2.WatchResponse]
    ) -> AsyncIterator[rpc_pb2.WatchResponse]:
        """The watch's responses; an unavailable endpoint is left for the next call."""
        try:
            async for response in call:
                yield response
        except grpc.aio.AioRpcError as e:
            if e.code() == grpc.StatusCode.UNAVAILABLE:
                self._fail_over()
            raise
