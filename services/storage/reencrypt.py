"""Rewrite every stale value under the storage prefix with the writing provider.

After a key rotation (a new key put first in the configuration, the storage
service restarted), objects are still encrypted with the old key; this reads
each one and, where it was read through any provider but the first, writes it
back re-encrypted. Each rewrite is a compare-and-swap on the value's
mod_revision, re-read and retried on conflict, so a concurrent update is never
lost: whatever a client wrote in between is what gets re-encrypted.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from services.storage.encryption import Transformers, UnreadableValue
from strata.etcd import Etcd, prefix_end
from strata.proto.etcd.etcdserverpb import rpc_pb2

PAGE = 500
MAX_ATTEMPTS = 10


@dataclass
class Report:
    scanned: int = 0
    rewritten: int = 0
    retried: int = 0
    unreadable: list[str] = field(default_factory=list)

    def summary(self) -> str:
        return (
            f"scanned={self.scanned} rewritten={self.rewritten} retried={self.retried} "
            f"unreadable={len(self.unreadable)}"
        )


async def _rewrite(
    etcd: Etcd, transformers: Transformers, key: str, ekey: bytes, value: bytes, revision: int,
    report: Report,
) -> None:  # fmt: skip
    for _ in range(MAX_ATTEMPTS):
        decrypted = transformers.read(key, ekey, value)
        if not decrypted.stale:
            return
        fresh = transformers.write(key, ekey, decrypted.plaintext)
        compare = rpc_pb2.Compare(
            key=ekey,
            target=rpc_pb2.Compare.MOD,
            result=rpc_pb2.Compare.EQUAL,
            mod_revision=revision,
        )
        response = await etcd.txn(
            rpc_pb2.TxnRequest(
                compare=[compare],
                success=[rpc_pb2.RequestOp(request_put=rpc_pb2.PutRequest(key=ekey, value=fresh))],
                failure=[rpc_pb2.RequestOp(request_range=rpc_pb2.RangeRequest(key=ekey))],
            )
        )
        if response.succeeded:
            report.rewritten += 1
            return
        report.retried += 1
        current = response.responses[0].response_range.kvs
        if not current:
            return  # deleted meanwhile: nothing left to re-encrypt
        value, revision = current[0].value, current[0].mod_revision
    raise RuntimeError(f"{key} kept changing; gave up after {MAX_ATTEMPTS} attempts")


async def reencrypt(etcd: Etcd, prefix: str, transformers: Transformers) -> Report:
    base = prefix.rstrip("/").encode()
    start, end = base + b"/", prefix_end(base + b"/")
    report = Report()
    while True:
        response = await etcd.range(start, end, limit=PAGE)
        for kv in response.kvs:
            key = kv.key[len(base) :].decode()
            report.scanned += 1
            try:
                await _rewrite(etcd, transformers, key, kv.key, kv.value, kv.mod_revision, report)
            except UnreadableValue as e:
                report.unreadable.append(f"{key}: {e}")
        if not response.more:
            return report
        start = response.kvs[-1].key + b"\x00"
