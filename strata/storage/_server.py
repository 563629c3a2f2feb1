"""StorageServicer: serves any implementation of the storage contract as
strata.storage.v1.Storage, so the storage service and the cacher share one
wire adapter and differ only in what they plug into it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable
from typing import TypeVar

import grpc

from strata.proto.storage.v1 import storage_pb2, storage_pb2_grpc
from strata.storage._errors import StorageError
from strata.storage._interface import (
    GetOptions,
    ListOptions,
    Preconditions,
    Predicate,
    Storage,
    WatchOptions,
)
from strata.storage._wire import abort

Context = grpc.aio.ServicerContext[object, object]
T = TypeVar("T")


async def _answer(context: Context, call: Awaitable[T]) -> T:
    """call's result, or the call ended with the storage error's code and type."""
    try:
        return await call
    except StorageError as e:
        await abort(context, e)
        raise


def _predicate(message: storage_pb2.Predicate) -> Predicate:
    return Predicate(label_selector=message.label_selector, field_selector=message.field_selector)


class StorageServicer(storage_pb2_grpc.StorageServicer):
    def __init__(self, storage: Storage) -> None:
        self._storage = storage

    async def Create(
        self, request: storage_pb2.CreateRequest, context: Context
    ) -> storage_pb2.Object:
        return await _answer(
            context,
            self._storage.create(request.key, request.value, ttl_seconds=request.ttl_seconds),
        )

    async def Get(self, request: storage_pb2.GetRequest, context: Context) -> storage_pb2.Object:
        options = GetOptions(
            resource_version=request.resource_version,
            resource_version_match=request.resource_version_match,
            ignore_not_found=request.ignore_not_found,
        )
        return await _answer(context, self._storage.get(request.key, options))

    async def List(
        self, request: storage_pb2.ListRequest, context: Context
    ) -> storage_pb2.ListResponse:
        options = ListOptions(
            resource_version=request.resource_version,
            resource_version_match=request.resource_version_match,
            limit=request.limit,
            continue_token=getattr(request, "continue"),
            predicate=_predicate(request.predicate),
        )
        result = await _answer(context, self._storage.list(request.prefix, options))
        response = storage_pb2.ListResponse(
            items=result.items, resource_version=result.resource_version
        )
        setattr(response, "continue", result.continue_token)  # a Python keyword
        if result.remaining_item_count is not None:
            response.remaining_item_count = result.remaining_item_count
        return response

    async def Update(
        self, request: storage_pb2.UpdateRequest, context: Context
    ) -> storage_pb2.Object:
        return await _answer(
            context,
            self._storage.update(
                request.key,
                request.value,
                expected_resource_version=request.expected_resource_version,
            ),
        )

    async def Delete(
        self, request: storage_pb2.DeleteRequest, context: Context
    ) -> storage_pb2.Object:
        preconditions = None
        if request.HasField("preconditions"):
            preconditions = Preconditions(
                uid=request.preconditions.uid,
                resource_version=request.preconditions.resource_version,
            )
        return await _answer(
            context, self._storage.delete(request.key, preconditions=preconditions)
        )

    async def Watch(
        self, request: storage_pb2.WatchRequest, context: Context
    ) -> AsyncIterator[storage_pb2.WatchEvent]:
        options = WatchOptions(
            resource_version=request.resource_version,
            recursive=request.recursive,
            predicate=_predicate(request.predicate),
            progress_notify=request.progress_notify,
        )
        events = self._storage.watch(request.key, options)
        try:
            async for event in events:
                yield event
        except StorageError as e:
            await abort(context, e)
        finally:
            await events.aclose()

    async def CurrentRevision(
        self, request: storage_pb2.CurrentRevisionRequest, context: Context
    ) -> storage_pb2.CurrentRevisionResponse:
        revision = await _answer(context, self._storage.current_revision())
        return storage_pb2.CurrentRevisionResponse(revision=revision)

    async def Count(
        self, request: storage_pb2.CountRequest, context: Context
    ) -> storage_pb2.CountResponse:
        count = await _answer(context, self._storage.count(request.prefix))
        return storage_pb2.CountResponse(count=count)

    async def Compact(
        self, request: storage_pb2.CompactRequest, context: Context
    ) -> storage_pb2.CompactResponse:
        await _answer(context, self._storage.compact(request.revision))
        return storage_pb2.CompactResponse()
