"""StorageServicer: serves any implementation of the storage contract as
strata.storage.v1.Storage, so the storage service and the cacher share one
wire adapter and differ only in what they plug into it.

Each operation is one method here, used both by its unary RPC and by the
Pipeline stream, which runs the calls of a batch concurrently and sends
results back in batches as they finish.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Awaitable
from typing import Any, Protocol, TypeVar, runtime_checkable

import grpc

from strata import pipeline, service, telemetry
from strata.pipeline import Operation
from strata.proto.storage.v1 import storage_pb2, storage_pb2_grpc
from strata.storage import wire_bytes as wire
from strata.storage._errors import StorageError
from strata.storage._interface import (
    GetOptions,
    ListOptions,
    ListResult,
    Preconditions,
    Predicate,
    Storage,
    WatchOptions,
)
from strata.storage._wire import SERVICE_NAME, abort, failure
from strata.storage.watch_stream import Sink, encoded, pump, serve_watch_stream

Context = grpc.aio.ServicerContext[object, object]
T = TypeVar("T")
_tracer = telemetry.tracer("strata.storage.server")
_log = telemetry.get_logger("strata.storage.server")


async def _answer(context: Context, call: Awaitable[T]) -> T:
    """call's result, or the call ended with the storage error's code and type."""
    try:
        return await call
    except StorageError as e:
        await abort(context, e)
        raise


def _failure_bytes(error: StorageError) -> bytes:
    return failure(error).SerializeToString()


def _unexpected(request: Any, description: str) -> bytes:
    """A bug's failure, as the storage error of the call's key."""
    return _failure_bytes(StorageError(getattr(request, "key", ""), description))


_EMPTY_CALL = storage_pb2.Failure(error="InvalidRequest", message="empty call").SerializeToString()


def _predicate(message: storage_pb2.Predicate) -> Predicate:
    return Predicate(
        label_selector=message.label_selector,
        field_selector=message.field_selector,
        owned_or_deleting=message.owned_or_deleting,
    )


@runtime_checkable
class EncodedWatches(Protocol):
    """A storage whose watches come already encoded (the cacher's, shared by watchers)."""

    def watch_encoded(self, key: str, opts: WatchOptions) -> AsyncGenerator[bytes, None]: ...


@runtime_checkable
class SinkWatches(Protocol):
    """A storage that puts a watch's encoded events into a sink itself, straight
    from its fan-out (the cacher's): no task per watch and event in between."""

    async def watch_into(self, key: str, opts: WatchOptions, sink: Sink) -> None: ...


def _watch_options(request: storage_pb2.WatchRequest) -> WatchOptions:
    return WatchOptions(
        resource_version=request.resource_version,
        recursive=request.recursive,
        predicate=_predicate(request.predicate),
        progress_notify=request.progress_notify,
        send_initial_events=request.send_initial_events
        if request.HasField("send_initial_events")
        else None,
        timeout_seconds=request.timeout_seconds,
        progress_interval_seconds=request.progress_interval_seconds,
    )


class StorageServicer(storage_pb2_grpc.StorageServicer):
    def __init__(self, storage: Storage) -> None:
        self._storage = storage
        list_result = Operation("List", self._list_result, "list", wire.list_response)
        self._pipeline = pipeline.Dispatcher(
            SERVICE_NAME,
            {  # pipelined call kind -> its operation
                "create": Operation("Create", self._create, "object"),
                "get": Operation("Get", self._get, "object"),
                "list": list_result,
                "update": Operation("Update", self._update, "object"),
                "delete": Operation("Delete", self._delete, "object"),
                "current_revision": Operation(
                    "CurrentRevision", self._current_revision, "current_revision"
                ),
                "count": Operation("Count", self._count, "count"),
                "compact": Operation("Compact", self._compact, "compact"),
                "request_progress": Operation(
                    "RequestProgress", self._request_progress, "request_progress"
                ),
            },
            wire.result,
            refused=StorageError,
            failure=_failure_bytes,
            unexpected=_unexpected,
            empty=_EMPTY_CALL,
            tracer=_tracer,
            log=_log,
        )

    # --- the operations ----------------------------------------------------------
    # Those that only pass a request on return the storage's own coroutine: one
    # coroutine fewer a call, on the path every write and read takes.

    # A write's envelope is passed on only when it has one: an implementation
    # that never gets one (bench's storage floor) need not take the argument.

    def _create(self, request: storage_pb2.CreateRequest) -> Awaitable[storage_pb2.Object]:
        if request.HasField("envelope"):
            return self._storage.create(
                request.key,
                request.value,
                ttl_seconds=request.ttl_seconds,
                envelope=request.envelope,
            )
        return self._storage.create(request.key, request.value, ttl_seconds=request.ttl_seconds)

    def _get(self, request: storage_pb2.GetRequest) -> Awaitable[storage_pb2.Object]:
        options = GetOptions(
            resource_version=request.resource_version,
            resource_version_match=request.resource_version_match,
            ignore_not_found=request.ignore_not_found,
        )
        return self._storage.get(request.key, options)

    def _list_result(self, request: storage_pb2.ListRequest) -> Awaitable[ListResult]:
        options = ListOptions(
            resource_version=request.resource_version,
            resource_version_match=request.resource_version_match,
            limit=request.limit,
            continue_token=getattr(request, "continue"),
            predicate=_predicate(request.predicate),
        )
        return self._storage.list(request.prefix, options)

    async def _list(self, request: storage_pb2.ListRequest) -> storage_pb2.ListResponse:
        result = await self._list_result(request)
        response = storage_pb2.ListResponse(
            items=result.items, resource_version=result.resource_version
        )
        setattr(response, "continue", result.continue_token)  # a Python keyword
        if result.remaining_item_count is not None:
            response.remaining_item_count = result.remaining_item_count
        return response

    def _update(self, request: storage_pb2.UpdateRequest) -> Awaitable[storage_pb2.Object]:
        if request.HasField("envelope"):
            return self._storage.update(
                request.key,
                request.value,
                expected_resource_version=request.expected_resource_version,
                ttl_seconds=request.ttl_seconds,
                envelope=request.envelope,
            )
        return self._storage.update(
            request.key,
            request.value,
            expected_resource_version=request.expected_resource_version,
            ttl_seconds=request.ttl_seconds,
        )

    def _delete(self, request: storage_pb2.DeleteRequest) -> Awaitable[storage_pb2.Object]:
        preconditions = None
        if request.HasField("preconditions"):
            preconditions = Preconditions(
                uid=request.preconditions.uid,
                resource_version=request.preconditions.resource_version,
            )
        return self._storage.delete(request.key, preconditions=preconditions)

    async def _current_revision(
        self, request: storage_pb2.CurrentRevisionRequest
    ) -> storage_pb2.CurrentRevisionResponse:
        return storage_pb2.CurrentRevisionResponse(revision=await self._storage.current_revision())

    async def _count(self, request: storage_pb2.CountRequest) -> storage_pb2.CountResponse:
        return storage_pb2.CountResponse(count=await self._storage.count(request.prefix))

    async def _compact(self, request: storage_pb2.CompactRequest) -> storage_pb2.CompactResponse:
        await self._storage.compact(request.revision)
        return storage_pb2.CompactResponse()

    async def _request_progress(
        self, request: storage_pb2.RequestProgressRequest
    ) -> storage_pb2.RequestProgressResponse:
        await self._storage.request_progress()
        return storage_pb2.RequestProgressResponse()

    # --- unary RPCs --------------------------------------------------------------

    async def Create(
        self, request: storage_pb2.CreateRequest, context: Context
    ) -> storage_pb2.Object:
        return await _answer(context, self._create(request))

    async def Get(self, request: storage_pb2.GetRequest, context: Context) -> storage_pb2.Object:
        return await _answer(context, self._get(request))

    async def List(
        self, request: storage_pb2.ListRequest, context: Context
    ) -> storage_pb2.ListResponse:
        return await _answer(context, self._list(request))

    async def Update(
        self, request: storage_pb2.UpdateRequest, context: Context
    ) -> storage_pb2.Object:
        return await _answer(context, self._update(request))

    async def Delete(
        self, request: storage_pb2.DeleteRequest, context: Context
    ) -> storage_pb2.Object:
        return await _answer(context, self._delete(request))

    async def CurrentRevision(
        self, request: storage_pb2.CurrentRevisionRequest, context: Context
    ) -> storage_pb2.CurrentRevisionResponse:
        return await _answer(context, self._current_revision(request))

    async def Count(
        self, request: storage_pb2.CountRequest, context: Context
    ) -> storage_pb2.CountResponse:
        return await _answer(context, self._count(request))

    async def Compact(
        self, request: storage_pb2.CompactRequest, context: Context
    ) -> storage_pb2.CompactResponse:
        return await _answer(context, self._compact(request))

    async def RequestProgress(
        self, request: storage_pb2.RequestProgressRequest, context: Context
    ) -> storage_pb2.RequestProgressResponse:
        return await _answer(context, self._request_progress(request))

    def _encoded_watch(self, request: storage_pb2.WatchRequest) -> AsyncGenerator[bytes, None]:
        """The watch's encoded WatchEvents: an implementation that encodes each event
        once for all its watchers (EncodedWatches) has its bytes passed on as they are."""
        storage = self._storage
        if isinstance(storage, EncodedWatches):
            return storage.watch_encoded(request.key, _watch_options(request))
        return encoded(storage.watch(request.key, _watch_options(request)))

    async def _watch_into(self, request: storage_pb2.WatchRequest, sink: Sink) -> None:
        storage = self._storage
        if isinstance(storage, SinkWatches):
            await storage.watch_into(request.key, _watch_options(request), sink)
        else:
            await pump(self._encoded_watch(request), sink)

    async def Watch(  # type: ignore[override]  # yields WatchEvents as bytes: see add_to_server
        self, request: storage_pb2.WatchRequest, context: Context
    ) -> AsyncIterator[bytes]:
        events = self._encoded_watch(request)
        try:
            async for event in events:
                yield event
        except StorageError as e:
            await abort(context, e)
        finally:
            await events.aclose()

    async def WatchStream(  # type: ignore[override]  # yields WatchFrames as bytes: see add_to_server
        self, request_iterator: AsyncIterator[storage_pb2.WatchStreamRequest], context: Context
    ) -> AsyncIterator[bytes]:
        frames = serve_watch_stream(request_iterator, self._watch_into)
        try:
            async for message in frames:
                yield message
        finally:
            await frames.aclose()

    # --- the pipeline ------------------------------------------------------------

    async def Pipeline(  # type: ignore[override]  # yields Results as bytes: see add_to_server
        self, request_iterator: AsyncIterator[storage_pb2.Calls], context: Context
    ) -> AsyncIterator[bytes]:
        results = self._pipeline.stream(request_iterator)
        try:
            async for message in results:
                yield message
        finally:
            await results.aclose()


def add_to_server(servicer: StorageServicer, server: grpc.aio.Server) -> None:
    """Register servicer as strata.storage.v1.Storage, its Pipeline and watches
    answering with the wire bytes they write themselves."""
    service.add_servicer(
        storage_pb2_grpc.add_StorageServicer_to_server,
        servicer,
        server,
        SERVICE_NAME,
        answering_bytes=("Pipeline", "Watch", "WatchStream"),
    )
