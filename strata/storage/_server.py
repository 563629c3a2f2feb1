"""StorageServicer: serves any implementation of the storage contract as
strata.storage.v1.Storage, so the storage service and the cacher share one
wire adapter and differ only in what they plug into it."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable
from typing import TypeVar

import grpc

from strata.proto.storage.v1 import storage_pb2, storage_pb2_grpc
from strata.storage._errors import StorageError
from strata.storage._interface import (
    GetOptions,
    ListOptions,
    Preconditions,
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
        options = GetOptions(resource_version=request.resource_version)
        return await _answer(context, self._storage.get(request.key, options))

    async def List(
        self, request: storage_pb2.ListRequest, context: Context
    ) -> storage_pb2.ListResponse:
        options = ListOptions(resource_version=request.resource_version)
        result = await _answer(context, self._storage.list(request.prefix, options))
        return storage_pb2.ListResponse(
            items=result.items, resource_version=result.resource_version
        )

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
    ) -> AsyncGenerator[storage_pb2.WatchEvent, None]:
        options = WatchOptions(
            resource_version=request.resource_version, recursive=request.recursive
        )
        try:
            async for event in self._storage.watch(request.key, options):
                yield event
        except StorageError as e:
            await abort(context, e)

    async def CurrentRevision(
        self, request: storage_pb2.CurrentRevisionRequest, context: Context
    ) -> storage_pb2.CurrentRevisionResponse:
        revision = await _answer(context, self._storage.current_revision())
        return storage_pb2.CurrentRevisionResponse(revision=revision)
