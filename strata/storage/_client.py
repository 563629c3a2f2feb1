"""GrpcStorage: the storage contract on top of a strata.storage.v1.Storage
channel, which may lead to the storage service or to the cacher.

Unary operations go over the Pipeline stream by default (one gRPC call per
operation costs more than the operation itself in Python gRPC); pipelined
calls carry their own trace context and open a CLIENT span when sampled, as
gRPC instrumentation would. Watches are ordinary server streams, or many on one WatchStream.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Sequence
from typing import Any, TypeVar

import grpc

from strata import telemetry
from strata.pipeline import BULK, ORDINARY
from strata.proto.storage.v1 import storage_pb2, storage_pb2_grpc
from strata.storage._interface import (
    GetOptions,
    ListOptions,
    ListResult,
    Preconditions,
    Predicate,
    WatchOptions,
)
from strata.storage._pipeline import pipeline_client
from strata.storage._wire import SERVICE_NAME, from_failure, restore

T = TypeVar("T")


async def _call(response: Awaitable[T]) -> T:
    try:
        return await response
    except grpc.aio.AioRpcError as e:
        raise restore(e) from None


def predicate_message(predicate: Predicate) -> storage_pb2.Predicate:
    return storage_pb2.Predicate(
        label_selector=predicate.label_selector,
        field_selector=predicate.field_selector,
        owned_or_deleting=predicate.owned_or_deleting,
    )


def watch_request(key: str, opts: WatchOptions) -> storage_pb2.WatchRequest:
    return storage_pb2.WatchRequest(
        key=key,
        recursive=opts.recursive,
        resource_version=opts.resource_version,
        predicate=predicate_message(opts.predicate),
        progress_notify=opts.progress_notify,
        send_initial_events=opts.send_initial_events,
        timeout_seconds=opts.timeout_seconds,
        progress_interval_seconds=opts.progress_interval_seconds,
    )


def _list_result(response: storage_pb2.ListResponse) -> ListResult:
    return ListResult(
        items=list(response.items),
        resource_version=response.resource_version,
        continue_token=getattr(response, "continue"),
        remaining_item_count=response.remaining_item_count
        if response.HasField("remaining_item_count")
        else None,
    )


class WatchStreamCall:
    """The client end of one Storage/WatchStream: open and cancel watches under
    ids the caller picks, and read the frames that come back."""

    def __init__(self, stub: storage_pb2_grpc.StorageAsyncStub) -> None:
        self._outgoing: asyncio.Queue[storage_pb2.WatchStreamRequest | None] = asyncio.Queue()
        with telemetry.outside_traces():
            self._call = stub.WatchStream(self._requests())

    async def _requests(self) -> AsyncIterator[storage_pb2.WatchStreamRequest]:
        while (message := await self._outgoing.get()) is not None:
            yield message

    def open(self, watch_id: int, key: str, opts: WatchOptions) -> None:
        opened = storage_pb2.OpenWatch(id=watch_id, watch=watch_request(key, opts))
        self._outgoing.put_nowait(storage_pb2.WatchStreamRequest(open=opened))

    def cancel(self, watch_id: int) -> None:
        self._outgoing.put_nowait(storage_pb2.WatchStreamRequest(cancel=watch_id))

    async def connected(self) -> None:
        """Returns once the stream reaches the storage; raises the storage error
        (Unavailable when nothing answers) if it cannot."""
        try:
            await self._call.wait_for_connection()
        except grpc.aio.AioRpcError as e:
            raise restore(e) from None

    async def frames(self) -> AsyncIterator[Sequence[storage_pb2.WatchFrame]]:
        """Batches of frames until the stream ends; a broken stream raises the
        storage error it stands for."""
        try:
            async for message in self._call:
                yield message.frames
        except grpc.aio.AioRpcError as e:
            raise restore(e) from None

    def close(self) -> None:
        self._outgoing.put_nowait(None)
        self._call.cancel()


class GrpcStorage:
    def __init__(self, channel: grpc.aio.Channel, *, pipelined: bool = True) -> None:
        self._stub = storage_pb2_grpc.StorageStub(channel)
        self._pipeline = pipeline_client(channel) if pipelined else None

    async def close(self) -> None:
        if self._pipeline is not None:
            await self._pipeline.close()

    async def _unary(
        self, method: str, field: str, request: Any, answer: str, *, lane: int = ORDINARY
    ) -> Any:
        """request sent as method (pipelined when enabled, in lane); the named
        part of its answer."""
        if self._pipeline is None:
            return await _call(getattr(self._stub, method)(request))
        call = storage_pb2.Call()
        getattr(call, field).CopyFrom(request)
        result = await self._pipeline.call(call, f"{SERVICE_NAME}/{method}", lane=lane)
        if result.WhichOneof("response") == "failure":
            raise from_failure(result.failure)
        return getattr(result, answer)

    async def create(
        self,
        key: str,
        value: bytes,
        *,
        ttl_seconds: int = 0,
        envelope: storage_pb2.Envelope | None = None,
    ) -> storage_pb2.Object:
        request = storage_pb2.CreateRequest(key=key, value=value, ttl_seconds=ttl_seconds)
        if envelope is not None:
            # Copied in place: a constructor given the message copies it slowly.
            request.envelope.CopyFrom(envelope)
        obj: storage_pb2.Object = await self._unary("Create", "create", request, "object")
        return obj

    async def get(self, key: str, opts: GetOptions = GetOptions()) -> storage_pb2.Object:
        request = storage_pb2.GetRequest(
            key=key,
            resource_version=opts.resource_version,
            resource_version_match=opts.resource_version_match,
            ignore_not_found=opts.ignore_not_found,
        )
        obj: storage_pb2.Object = await self._unary("Get", "get", request, "object")
        return obj

    async def list(self, prefix: str, opts: ListOptions = ListOptions()) -> ListResult:
        request = storage_pb2.ListRequest(
            prefix=prefix,
            resource_version=opts.resource_version,
            resource_version_match=opts.resource_version_match,
            limit=opts.limit,
            predicate=predicate_message(opts.predicate),
        )
        setattr(request, "continue", opts.continue_token)  # a Python keyword
        response: storage_pb2.ListResponse = await self._unary(
            "List", "list", request, "list", lane=BULK
        )
        return _list_result(response)

    async def update(
        self,
        key: str,
        value: bytes,
        *,
        expected_resource_version: int,
        ttl_seconds: int = 0,
        envelope: storage_pb2.Envelope | None = None,
    ) -> storage_pb2.Object:
        request = storage_pb2.UpdateRequest(
            key=key,
            value=value,
            expected_resource_version=expected_resource_version,
            ttl_seconds=ttl_seconds,
        )
        if envelope is not None:
            request.envelope.CopyFrom(envelope)
        obj: storage_pb2.Object = await self._unary("Update", "update", request, "object")
        return obj

    async def delete(
        self, key: str, *, preconditions: Preconditions | None = None
    ) -> storage_pb2.Object:
        request = storage_pb2.DeleteRequest(key=key)
        if preconditions is not None:
            request.preconditions.uid = preconditions.uid
            request.preconditions.resource_version = preconditions.resource_version
        obj: storage_pb2.Object = await self._unary("Delete", "delete", request, "object")
        return obj

    async def watch(
        self, key: str, opts: WatchOptions = WatchOptions()
    ) -> AsyncGenerator[storage_pb2.WatchEvent, None]:
        call = self._stub.Watch(watch_request(key, opts))
        try:
            async for event in call:
                yield event
        except grpc.aio.AioRpcError as e:
            raise restore(e) from None
        finally:
            call.cancel()

    def watch_stream(self) -> WatchStreamCall:
        """A new WatchStream: many watches on one stream, each event sent once."""
        return WatchStreamCall(self._stub)

    async def current_revision(self) -> int:
        request = storage_pb2.CurrentRevisionRequest()
        response = await self._unary(
            "CurrentRevision", "current_revision", request, "current_revision"
        )
        return int(response.revision)

    async def count(self, prefix: str) -> int:
        response = await self._unary(
            "Count", "count", storage_pb2.CountRequest(prefix=prefix), "count"
        )
        return int(response.count)

    async def compact(self, revision: int) -> None:
        await self._unary(
            "Compact", "compact", storage_pb2.CompactRequest(revision=revision), "compact"
        )

    async def request_progress(self) -> None:
        await self._unary(
            "RequestProgress",
            "request_progress",
            storage_pb2.RequestProgressRequest(),
            "request_progress",
        )
