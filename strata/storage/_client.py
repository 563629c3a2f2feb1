"""GrpcStorage: the storage contract on top of a strata.storage.v1.Storage
channel, which may lead to the storage service or to the cacher."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable
from typing import TypeVar

import grpc

from strata.proto.storage.v1 import storage_pb2, storage_pb2_grpc
from strata.storage._interface import (
    GetOptions,
    ListOptions,
    ListResult,
    Preconditions,
    Predicate,
    WatchOptions,
)
from strata.storage._wire import restore

T = TypeVar("T")


async def _call(response: Awaitable[T]) -> T:
    try:
        return await response
    except grpc.aio.AioRpcError as e:
        raise restore(e) from None


def predicate_message(predicate: Predicate) -> storage_pb2.Predicate:
    return storage_pb2.Predicate(
        label_selector=predicate.label_selector, field_selector=predicate.field_selector
    )


class GrpcStorage:
    def __init__(self, channel: grpc.aio.Channel) -> None:
        self._stub = storage_pb2_grpc.StorageStub(channel)

    async def create(self, key: str, value: bytes, *, ttl_seconds: int = 0) -> storage_pb2.Object:
        request = storage_pb2.CreateRequest(key=key, value=value, ttl_seconds=ttl_seconds)
        return await _call(self._stub.Create(request))

    async def get(self, key: str, opts: GetOptions = GetOptions()) -> storage_pb2.Object:
        request = storage_pb2.GetRequest(
            key=key,
            resource_version=opts.resource_version,
            resource_version_match=opts.resource_version_match,
            ignore_not_found=opts.ignore_not_found,
        )
        return await _call(self._stub.Get(request))

    async def list(self, prefix: str, opts: ListOptions = ListOptions()) -> ListResult:
        request = storage_pb2.ListRequest(
            prefix=prefix,
            resource_version=opts.resource_version,
            resource_version_match=opts.resource_version_match,
            limit=opts.limit,
            predicate=predicate_message(opts.predicate),
        )
        setattr(request, "continue", opts.continue_token)  # a Python keyword
        response = await _call(self._stub.List(request))
        return ListResult(
            items=list(response.items),
            resource_version=response.resource_version,
            continue_token=getattr(response, "continue"),
            remaining_item_count=response.remaining_item_count
            if response.HasField("remaining_item_count")
            else None,
        )

    async def update(
        self, key: str, value: bytes, *, expected_resource_version: int
    ) -> storage_pb2.Object:
        request = storage_pb2.UpdateRequest(
            key=key, value=value, expected_resource_version=expected_resource_version
        )
        return await _call(self._stub.Update(request))

    async def delete(
        self, key: str, *, preconditions: Preconditions | None = None
    ) -> storage_pb2.Object:
        request = storage_pb2.DeleteRequest(key=key)
        if preconditions is not None:
            request.preconditions.uid = preconditions.uid
            request.preconditions.resource_version = preconditions.resource_version
        return await _call(self._stub.Delete(request))

    async def watch(
        self, key: str, opts: WatchOptions = WatchOptions()
    ) -> AsyncGenerator[storage_pb2.WatchEvent, None]:
        call = self._stub.Watch(
            storage_pb2.WatchRequest(
                key=key,
                recursive=opts.recursive,
                resource_version=opts.resource_version,
                predicate=predicate_message(opts.predicate),
                progress_notify=opts.progress_notify,
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
        response = await _call(self._stub.CurrentRevision(storage_pb2.CurrentRevisionRequest()))
        return response.revision

    async def count(self, prefix: str) -> int:
        response = await _call(self._stub.Count(storage_pb2.CountRequest(prefix=prefix)))
        return response.count

    async def compact(self, revision: int) -> None:
        await _call(self._stub.Compact(storage_pb2.CompactRequest(revision=revision)))
