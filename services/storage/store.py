"""EtcdStorage: the storage contract on etcd v3 (kube's etcd3 store).

Keys given to the contract are relative ("/configmaps/demo/a"); the configured
prefix ("/registry" by default) is put in front for etcd. An object's
resourceVersion is its mod_revision, a list's is the header revision of the
read, a delete's the revision of the delete.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Iterator
from contextlib import contextmanager

import grpc

from services.storage import objects
from strata.api.versions import parse_resource_version
from strata.etcd import Etcd, prefix_end
from strata.proto.etcd.etcdserverpb import rpc_pb2
from strata.proto.etcd.mvccpb import kv_pb2
from strata.proto.storage.v1 import storage_pb2
from strata.storage import (
    Conflict,
    Expired,
    GetOptions,
    InvalidObject,
    KeyExists,
    KeyNotFound,
    ListOptions,
    ListResult,
    Preconditions,
    TooLargeResourceVersion,
    Unavailable,
    WatchOptions,
)

Compare = rpc_pb2.Compare


def _unchanged_since(ekey: bytes, mod_revision: int) -> Compare:
    return Compare(key=ekey, target=Compare.MOD, result=Compare.EQUAL, mod_revision=mod_revision)


def _absent(ekey: bytes) -> Compare:
    return Compare(key=ekey, target=Compare.CREATE, result=Compare.EQUAL, create_revision=0)


def _txn(ekey: bytes, condition: Compare, then: rpc_pb2.RequestOp) -> rpc_pb2.TxnRequest:
    """If condition holds do then; otherwise read the key back (to tell why)."""
    return rpc_pb2.TxnRequest(
        compare=[condition],
        success=[then],
        failure=[rpc_pb2.RequestOp(request_range=rpc_pb2.RangeRequest(key=ekey))],
    )


@contextmanager
def _etcd_errors(key: str) -> Iterator[None]:
    try:
        yield
    except grpc.aio.AioRpcError as e:
        raise Unavailable(key, f"etcd: {e.details()}") from None


def _revision(key: str, value: str) -> int:
    try:
        return parse_resource_version(value)
    except ValueError as e:
        raise InvalidObject(key, str(e)) from None


class EtcdStorage:
    def __init__(self, etcd: Etcd, prefix: str = "/registry") -> None:
        self._etcd = etcd
        self._prefix = prefix.rstrip("/")

    def _etcd_key(self, key: str) -> bytes:
        if not key.startswith("/") or "/../" in key or key.endswith("/.."):
            raise InvalidObject(key, f"invalid key {key!r}")
        return (self._prefix + key).encode()

    def _key(self, etcd_key: bytes) -> str:
        return etcd_key.decode()[len(self._prefix) :]

    async def create(self, key: str, value: bytes, *, ttl_seconds: int = 0) -> storage_pb2.Object:
        ekey = self._etcd_key(key)
        obj, data = objects.for_etcd(key, value)
        with _etcd_errors(key):
            lease = await self._etcd.lease_grant(ttl_seconds) if ttl_seconds > 0 else 0
            put = rpc_pb2.PutRequest(key=ekey, value=data, lease=lease)
            response = await self._etcd.txn(
                _txn(ekey, _absent(ekey), rpc_pb2.RequestOp(request_put=put))
            )
        if not response.succeeded:
            raise KeyExists(key)
        return objects.envelope(key, obj, response.header.revision)

    async def get(self, key: str, opts: GetOptions = GetOptions()) -> storage_pb2.Object:
        minimum = _revision(key, opts.resource_version)
        with _etcd_errors(key):
            response = await self._etcd.range(
                self._etcd_key(key), serializable=opts.resource_version == "0"
            )
        self._check_not_older(key, minimum, response.header.revision)
        if not response.kvs:
            raise KeyNotFound(key)
        kv = response.kvs[0]
        return objects.from_etcd(key, kv.value, kv.mod_revision)

    @staticmethod
    def _check_not_older(key: str, minimum: int, revision: int) -> None:
        if minimum > revision:
            raise TooLargeResourceVersion(
                key, f"Too large resource version: {minimum}, current: {revision}"
            )

    async def list(self, prefix: str, opts: ListOptions = ListOptions()) -> ListResult:
        minimum = _revision(prefix, opts.resource_version)
        start = self._etcd_key(prefix)
        with _etcd_errors(prefix):
            response = await self._etcd.range(
                start, prefix_end(start), serializable=opts.resource_version == "0"
            )
        self._check_not_older(prefix, minimum, response.header.revision)
        items = [
            objects.from_etcd(self._key(kv.key), kv.value, kv.mod_revision) for kv in response.kvs
        ]
        return ListResult(items=items, resource_version=response.header.revision)

    async def update(
        self, key: str, value: bytes, *, expected_resource_version: int
    ) -> storage_pb2.Object:
        ekey = self._etcd_key(key)
        obj, data = objects.for_etcd(key, value)
        put = rpc_pb2.PutRequest(key=ekey, value=data)
        with _etcd_errors(key):
            response = await self._etcd.txn(
                _txn(
                    ekey,
                    _unchanged_since(ekey, expected_resource_version),
                    rpc_pb2.RequestOp(request_put=put),
                )
            )
        if not response.succeeded:
            if not response.responses[0].response_range.kvs:
                raise KeyNotFound(key)
            raise Conflict(key, f"{key}: resourceVersion {expected_resource_version} is stale")
        return objects.envelope(key, obj, response.header.revision)

    async def delete(
        self, key: str, *, preconditions: Preconditions | None = None
    ) -> storage_pb2.Object:
        ekey = self._etcd_key(key)
        remove = rpc_pb2.RequestOp(request_delete_range=rpc_pb2.DeleteRangeRequest(key=ekey))
        with _etcd_errors(key):
            current = await self._etcd.range(ekey)
            while True:
                if not current.kvs:
                    raise KeyNotFound(key)
                kv = current.kvs[0]
                if preconditions is not None:
                    self._check_preconditions(key, kv, preconditions)
                response = await self._etcd.txn(
                    _txn(ekey, _unchanged_since(ekey, kv.mod_revision), remove)
                )
                if response.succeeded:
                    return objects.from_etcd(key, kv.value, response.header.revision)
                current = response.responses[0].response_range

    @staticmethod
    def _check_preconditions(key: str, kv: kv_pb2.KeyValue, pre: Preconditions) -> None:
        meta = objects.decode(key, kv.value).get("metadata", {})
        if pre.uid and pre.uid != meta.get("uid"):
            raise Conflict(
                key,
                f"Precondition failed: UID in precondition: {pre.uid}, "
                f"UID in object meta: {meta.get('uid', '')}",
            )
        if pre.resource_version and pre.resource_version != str(kv.mod_revision):
            raise Conflict(
                key,
                f"Precondition failed: ResourceVersion in precondition: {pre.resource_version}, "
                f"ResourceVersion in object meta: {kv.mod_revision}",
            )

    async def current_revision(self) -> int:
        with _etcd_errors(""):
            response = await self._etcd.range(b"/", count_only=True)
        return response.header.revision

    async def watch(
        self, key: str, opts: WatchOptions = WatchOptions()
    ) -> AsyncGenerator[storage_pb2.WatchEvent, None]:
        start = self._etcd_key(key)
        end = prefix_end(start) if opts.recursive else b""
        since = _revision(key, opts.resource_version)
        Type = storage_pb2.WatchEvent
        with _etcd_errors(key):
            if since == 0:
                # "" and "0": the current state as ADDED, then every change after it.
                state = await self._etcd.range(start, end)
                for kv in state.kvs:
                    obj = objects.from_etcd(self._key(kv.key), kv.value, kv.mod_revision)
                    yield Type(type=Type.ADDED, object=obj, resource_version=kv.mod_revision)
                since = state.header.revision
            async for response in self._etcd.watch(
                start, end, start_revision=since + 1, prev_kv=True
            ):
                if response.compact_revision:
                    raise Expired(
                        key,
                        f"too old resource version: {since} ({response.compact_revision})",
                    )
                if response.canceled:
                    raise Unavailable(key, f"etcd canceled the watch: {response.cancel_reason}")
                for event in response.events:
                    yield self._event(event)

    def _event(self, event: kv_pb2.Event) -> storage_pb2.WatchEvent:
        Type = storage_pb2.WatchEvent
        kv = event.kv
        key = self._key(kv.key)
        if event.type == kv_pb2.Event.DELETE:
            obj = objects.from_etcd(key, event.prev_kv.value, kv.mod_revision)
            return Type(type=Type.DELETED, object=obj, resource_version=kv.mod_revision)
        kind = Type.ADDED if kv.create_revision == kv.mod_revision else Type.MODIFIED
        obj = objects.from_etcd(key, kv.value, kv.mod_revision)
        return Type(type=kind, object=obj, resource_version=kv.mod_revision)
