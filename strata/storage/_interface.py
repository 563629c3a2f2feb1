"""The storage contract (kube's storage.Interface) as a typing.Protocol.

Both the storage service (on etcd) and the cacher serve it over
strata.storage.v1.Storage; GrpcStorage is the client side of either. Values are
the protobuf envelopes themselves (Object, WatchEvent): they already are plain
values, and keeping them avoids a copy at every hop.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import Protocol

from strata.proto.storage.v1 import storage_pb2

Object = storage_pb2.Object
WatchEvent = storage_pb2.WatchEvent


@dataclass(frozen=True, kw_only=True)
class GetOptions:
    # "" = linearizable, "0" = any state, N = not older than N.
    resource_version: str = ""


@dataclass(frozen=True, kw_only=True)
class ListOptions:
    resource_version: str = ""


@dataclass(frozen=True, kw_only=True)
class ListResult:
    items: list[storage_pb2.Object]
    resource_version: int


@dataclass(frozen=True, kw_only=True)
class Preconditions:
    uid: str = ""
    resource_version: str = ""


@dataclass(frozen=True, kw_only=True)
class WatchOptions:
    resource_version: str = ""
    recursive: bool = True


class Storage(Protocol):
    async def create(self, key: str, value: bytes, *, ttl_seconds: int = 0) -> storage_pb2.Object:
        """Store value at key; KeyExists if something is there."""
        ...

    async def get(self, key: str, opts: GetOptions = GetOptions()) -> storage_pb2.Object:
        """The object at key; KeyNotFound if none."""
        ...

    async def list(self, prefix: str, opts: ListOptions = ListOptions()) -> ListResult:
        """Every object under prefix, read at one revision."""
        ...

    async def update(
        self, key: str, value: bytes, *, expected_resource_version: int
    ) -> storage_pb2.Object:
        """Compare-and-swap: Conflict unless the stored object is at expected_resource_version."""
        ...

    async def delete(
        self, key: str, *, preconditions: Preconditions | None = None
    ) -> storage_pb2.Object:
        """Remove the object; returns its last state at the delete revision."""
        ...

    def watch(
        self, key: str, opts: WatchOptions = WatchOptions()
    ) -> AsyncGenerator[storage_pb2.WatchEvent, None]:
        """Every change after opts.resource_version, in order, exactly once."""
        ...

    async def current_revision(self) -> int:
        """The newest revision storage has."""
        ...
