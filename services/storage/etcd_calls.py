"""How the storage service's operations become etcd calls: guarded transactions
built in place, and etcd's gRPC errors turned into storage errors. Kept apart
from EtcdStorage so the store reads as the contract's operations."""

from __future__ import annotations

import grpc

from strata.proto.etcd.etcdserverpb import rpc_pb2
from strata.storage import Expired, TooLargeResourceVersion, Unavailable

Compare = rpc_pb2.Compare


def guarded(ekey: bytes, *, unchanged_since: int | None) -> rpc_pb2.TxnRequest:
    """A Txn on ekey whose success branch (left for the caller to fill) runs if the
    key is unchanged since that mod revision, or, given None, does not exist.

    Built in place: upb copies every message handed to a constructor, and this
    runs on every write. A create has no failure branch (kube's has none: a
    failed compare says the key exists); other writes read the key back there,
    to tell a missing key from a changed one.
    """
    request = rpc_pb2.TxnRequest()
    compare = request.compare.add()
    compare.key = ekey
    compare.result = Compare.EQUAL
    if unchanged_since is not None:
        compare.target = Compare.MOD
        compare.mod_revision = unchanged_since
        request.failure.add().request_range.key = ekey
    else:
        compare.target = Compare.CREATE
        compare.create_revision = 0
    return request


def put(
    ekey: bytes, value: bytes, lease: int, *, unchanged_since: int | None = None
) -> rpc_pb2.TxnRequest:
    """A guarded put of value at ekey (see guarded), with a lease when not 0."""
    request = guarded(ekey, unchanged_since=unchanged_since)
    request_put = request.success.add().request_put
    request_put.key, request_put.value, request_put.lease = ekey, value, lease
    return request


class etcd_errors:
    """etcd's gRPC errors as storage errors; at_revision names the revision read.

    A class rather than a generator context manager: it runs on every request.
    """

    __slots__ = ("_at", "_key")

    def __init__(self, key: str, at_revision: int = 0) -> None:
        self._key, self._at = key, at_revision

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: object, error: BaseException | None, _: object) -> None:
        if not isinstance(error, grpc.aio.AioRpcError):
            return
        details = error.details() or ""
        if "required revision has been compacted" in details:
            raise Expired(self._key, f"too old resource version: {self._at}") from None
        if "required revision is a future revision" in details:
            raise TooLargeResourceVersion(
                self._key, f"Too large resource version: {self._at}"
            ) from None
        raise Unavailable(self._key, f"etcd: {details or error.code().name}") from None
