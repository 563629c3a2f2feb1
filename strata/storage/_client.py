"""GrpcStorage: the storage contract on top of a strata.storage.v1.Storage
channel, which may lead to the storage service or to the cacher."""

from __future__ import annotations

from collections.abc import AsyncGenerator

import grpc

from strata.proto.storage.v1 import storage_pb2, storage_pb2_grpc
from strata.storage._interface import (
    GetOptions,
    ListOptions,
    ListResult,
    Preconditions,
    WatchOptions,
)
from strata.storage._wire import restore


class GrpcStorage:
    def __init__(self, channel: grpc.aio.Channel) -> None:
        self._stub = storage_pb2_grpc.StorageStub(channel)

    async def create(self, key: str, value: bytes, *, ttl_seconds: int = 0) -> storage_pb2.Object:
        try:
            return await self._stub.Create(
                storage_pb2.CreateRequest(key=key, value=value, ttl_seconds=ttl_seconds)
            )
        except grpc.aio.AioRpcError as e:
            raise restore(e) from None

    async def get(self, key: str, opts: GetOptions = GetOptions()) -> storage_pb2.Object:
        try:
            return await self._stub.Get(
                storage_pb2.GetRequest(key=key, resource_version=opts.resource_version)
            )
        except grpc.aio.AioRpcError as e:
            raise restore(e) from None

    async def list(self, prefix: str, opts: ListOptions = ListOptions()) -> ListResult:
        try:
            response = await self._stub.List(
                storage_pb2.ListRequest(prefix=prefix, resource_version=opts.resource_version)
            )
        except grpc.aio.AioRpcError as e:
            raise restore(e) from None
        return ListResult(items=list(response.items), resource_version=response.resource_version)

    async def update(
        self, key: str, value: bytes, *, expected_resource_version: int
    ) -> storage_pb2.Object:
        try:
            return await self._stub.Update(
                storage_pb2.UpdateRequest(
                    key=key, value=value, expected_resource_version=expected_resource_version
                )
            )
        except grpc.aio.AioRpcError as e:
            raise restore(e) from None

    async def delete(
        self, key: str, *, preconditions: Preconditions | None = None
    ) -> storage_pb2.Object:
        request = storage_pb2.DeleteRequest(key=key)
        if preconditions is not None:
            request.preconditions.uid = preconditions.uid
            request.preconditions.resource_version = preconditions.resource_version
        try:
            return await self._stub.Delete(request)
        except grpc.aio.AioRpcError as e:
            raise restore(e) from None

    async def watch(
        self, key: str, opts: WatchOptions = WatchOptions()
    ) -> AsyncGenerator[storage_pb2.WatchEvent, None]:
        call = self._stub.Watch(
            storage_pb2.WatchRequest(
                key=key, recursive=opts.recursive, resource_version=opts.resource_version
            )
        )
        try:
            async for event in call:
                yield event
        except grpc.aio.AioRpcError as e:
            raise restore(e) from None
        finally:
            call.cancel()

    async def current_revision(self) -> int:
        try:
            response = await self._stub.CurrentRevision(storage_pb2.CurrentRevisionRequest())
        except grpc.aio.AioRpcError as e:
            raise restore(e) from None
        return response.revision
