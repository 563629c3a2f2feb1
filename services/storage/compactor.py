"""The compactor: forget etcd history older than one interval, once per
interval however many storage replicas run (kube's etcd3 compactor).

Replicas coordinate through the version of the key `compact_rev_key`: each
interval every replica tries to bump it with a compare on the version it last
saw; the one that wins compacts to the revision recorded an interval ago, the
others learn the new version and wait. History is therefore kept for at least
one interval, and a watcher or continue token older than that gets 410.
"""

from __future__ import annotations

import asyncio

import grpc

from strata import telemetry
from strata.etcd import Etcd
from strata.proto.etcd.etcdserverpb import rpc_pb2

COMPACT_REV_KEY = b"compact_rev_key"

log = telemetry.get_logger("strata.storage.compactor")


async def compact_once(etcd: Etcd, version: int, revision: int) -> tuple[int, int, bool]:
    """One round: (the version now known, the current revision, whether this replica
    compacted). revision is what the previous round saw; 0 compacts nothing."""
    response = await etcd.txn(
        rpc_pb2.TxnRequest(
            compare=[
                rpc_pb2.Compare(
                    key=COMPACT_REV_KEY,
                    target=rpc_pb2.Compare.VERSION,
                    result=rpc_pb2.Compare.EQUAL,
                    version=version,
                )
            ],
            success=[
                rpc_pb2.RequestOp(
                    request_put=rpc_pb2.PutRequest(
                        key=COMPACT_REV_KEY, value=str(revision).encode()
                    )
                )
            ],
            failure=[rpc_pb2.RequestOp(request_range=rpc_pb2.RangeRequest(key=COMPACT_REV_KEY))],
        )
    )
    current = response.header.revision
    if not response.succeeded:
        return response.responses[0].response_range.kvs[0].version, current, False
    if revision:
        try:
            await etcd.compact(revision)
        except grpc.aio.AioRpcError as e:
            if "required revision has been compacted" not in (e.details() or ""):
                raise
    return version + 1, current, bool(revision)


class Compactor:
    def __init__(self, etcd: Etcd, interval: float) -> None:
        self._etcd = etcd
        self._interval = interval

    async def run(self) -> None:
        version, revision = 0, 0
        while True:
            await asyncio.sleep(self._interval)
            try:
                version, seen, compacted = await compact_once(self._etcd, version, revision)
                if compacted:
                    log.info("compacted", revision=revision)
                revision = seen
            except grpc.aio.AioRpcError as e:
                log.warning("compaction failed", error=e.details() or e.code().name)
