"""The storage floor: the least a storage hop in Python with grpc.aio can do on
this machine, for bench/storage.py --floor to drive as it drives the storage
service.

    python -m bench._storage_floor --listen 127.0.0.1:PORT --etcd 127.0.0.1:PORT

It serves strata.storage.v1.Storage with strata's own wire adapter
(StorageServicer: the same Pipeline stream, batches and encoding the storage
service uses, so one GrpcStorage client drives both) on a server without
interceptors, over an implementation that makes the one etcd call each
operation needs and nothing else: a create is one create-if-absent Txn (the
etcd call a storage service create makes), a get one Range, a page one Range
with a limit. No key checks, envelopes, object decoding, encryption, metrics,
tracing, read batching or compaction: whatever the storage service does on top
costs more, so the floor's ratios to raw etcd bound what any storage hop
reaches here.
"""

from __future__ import annotations

import argparse
from typing import cast

import grpc

from bench._floor import create_request
from strata import service, tls
from strata.etcd import Etcd, prefix_end
from strata.storage import (
    GetOptions,
    KeyExists,
    KeyNotFound,
    ListOptions,
    ListResult,
    Object,
    Storage,
    StorageServicer,
    add_to_server,
)

PREFIX = "/registry"


class FloorStorage:
    """Create, get and list, each one etcd call; the values stored as given."""

    def __init__(self, etcd: Etcd) -> None:
        self._etcd = etcd

    async def create(self, key: str, value: bytes, *, ttl_seconds: int = 0) -> Object:
        answer = await self._etcd.txn(create_request(f"{PREFIX}{key}".encode(), value))
        if not answer.succeeded:
            raise KeyExists(key)
        return Object(key=key, value=value, resource_version=answer.header.revision)

    async def get(self, key: str, opts: GetOptions = GetOptions()) -> Object:
        ranged = await self._etcd.range(f"{PREFIX}{key}".encode())
        if not ranged.kvs:
            raise KeyNotFound(key)
        kv = ranged.kvs[0]
        return Object(key=key, value=kv.value, resource_version=kv.mod_revision)

    async def list(self, prefix: str, opts: ListOptions = ListOptions()) -> ListResult:
        start = f"{PREFIX}{prefix}".encode()
        ranged = await self._etcd.range(start, prefix_end(start), limit=opts.limit)
        items = [
            Object(
                key=kv.key.decode()[len(PREFIX) :],
                value=kv.value,
                resource_version=kv.mod_revision,
            )
            for kv in ranged.kvs
        ]
        return ListResult(items=items, resource_version=ranged.header.revision)


async def _serve(listen: str, etcd_address: str, identity: tls.Identity) -> None:
    etcd = Etcd(etcd_address)
    server = grpc.aio.server(interceptors=[tls.AllowedCallers("floor", tls.CALLERS["storage"])])
    # Only what bench/storage.py calls: the contract's other operations are
    # not the floor's to bound.
    add_to_server(StorageServicer(cast(Storage, FloorStorage(etcd))), server)
    if server.add_secure_port(listen, tls.server_credentials(identity)) == 0:
        raise SystemExit(f"storage floor: cannot listen on {listen}")
    await server.start()
    await server.wait_for_termination()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--listen", required=True)
    parser.add_argument("--etcd", required=True)
    service.tls_flags(parser, "storage")
    args = parser.parse_args()
    service.run(_serve(args.listen, args.etcd, service.tls_identity(args, "storage floor")))


if __name__ == "__main__":
    main()
