"""StorageServicer: serves any implementation of the storage contract as
strata.storage.v1.Storage, so the storage service and the cacher share one
wire adapter and differ only in what they plug into it."""

from __future__ import annotations

from collections.abc import AsyncGenerator

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


class StorageServicer(storage_pb2_grpc.StorageServicer):
    def __init__(self, storage: Storage) -> None:
        self._storage = storage

    async def Create(
        self, request: storage_pb2.CreateRequest, context: Context
    ) -> storage_pb2.Object:
        try:
            return await self._storage.create(
                request.key, request.value, ttl_seconds=request.ttl_seconds
            )
        except StorageError as e:
            await abort(context, e)
            raise

    async def Get(self, request: storage_pb2.GetRequest, context: Context) -> storage_pb2.Object:
        try:
            return await self._storage.get(
                request.key, GetOptions(resource_version=request.resource_version)
            )
        except StorageError as e:
            await abort(context, e)
            raise

    async def List(
        self, request: storage_pb2.ListRequest, context: Context
    ) -> storage_pb2.ListResponse:
        try:
            result = await self._storage.list(
                request.prefix, ListOptions(resource_version=request.resource_version)
            )
        except StorageError as e:
            await abort(context, e)
            raise
        return storage_pb2.ListResponse(
            items=result.items, resource_version=result.resource_version
        )

    async def Update(
        self, request: storage_pb2.UpdateRequest, context: Context
    ) -> storage_pb2.Object:
        try:
            return await self._storage.update(
                request.key,
                request.value,
                expected_resource_version=request.expected_resource_version,
            )
        except StorageError as e:
            await abort(context, e)
            raise

    async def Delete(
        self, request: storage_pb2.DeleteRequest, context: Context
    ) -> storage_pb2.Object:
        preconditions = None
        if request.HasField("preconditions"):
            preconditions = Preconditions(
                uid=request.preconditions.uid,
                resource_version=request.preconditions.resource_version,
            )
        try:
            return await self._storage.delete(request.key, preconditions=preconditions)
        except StorageError as e:
            await abort(context, e)
            raise

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
        try:
            revision = await self._storage.current_revision()
        except StorageError as e:
            await abort(context, e)
            raise
        return storage_pb2.CurrentRevisionResponse(revision=revision)
