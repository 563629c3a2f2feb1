"""reencrypt against a real etcd while clients keep writing: every value ends
up under the new key and no concurrent update is lost."""

from __future__ import annotations

import asyncio
import os

import orjson

from services.storage.encryption import (
    AESCBC,
    AESGCM,
    Identity,
    ResourcePattern,
    Rule,
    Transformers,
)
from services.storage.reencrypt import reencrypt
from services.storage.store import EtcdStorage
from strata.etcd import Etcd
from strata.proto.storage.v1 import storage_pb2
from strata.storage import guaranteed_update

OLD = AESCBC(key_name="old", secret=os.urandom(32))
NEW = AESGCM(key_name="new", secret=os.urandom(32))
EVERYTHING = (ResourcePattern(resource=None, group=None),)


async def test_reencrypt_races_writers_without_losing_updates(etcd: Etcd) -> None:
    prefix = f"/reencrypt-{os.urandom(4).hex()}"
    before = EtcdStorage(etcd, prefix, transformers=Transformers([Rule(EVERYTHING, (OLD,))]))
    rotated = Transformers([Rule(EVERYTHING, (NEW, OLD, Identity()))])
    after = EtcdStorage(etcd, prefix, transformers=rotated)
    keys = [f"/counters/ns/c{i:03d}" for i in range(60)]
    for key in keys:
        body = {"apiVersion": "v1", "kind": "Thing", "metadata": {"name": key}, "data": {"n": "0"}}
        await before.create(key, orjson.dumps(body))

    async def increment(current: storage_pb2.Object) -> bytes:
        body = orjson.loads(current.value)
        body["data"]["n"] = str(int(body["data"]["n"]) + 1)
        return orjson.dumps(body)

    async def writer(offset: int) -> None:
        for key in keys[offset::3]:
            for _ in range(3):
                await guaranteed_update(after, key, increment)

    results = await asyncio.gather(
        writer(0), writer(1), writer(2), reencrypt(etcd, prefix, rotated)
    )
    report = results[-1]
    assert report is not None and not report.unreadable and report.scanned == len(keys)
    # A second pass finds nothing stale.
    again = await reencrypt(etcd, prefix, rotated)
    assert again.rewritten == 0 and again.scanned == len(keys)
    for key in keys:
        stored = (await etcd.range((prefix + key).encode())).kvs[0].value
        assert stored.startswith(NEW.prefix)
        assert orjson.loads((await after.get(key)).value)["data"] == {"n": "3"}


async def test_an_unchanged_update_rewrites_only_what_a_rotated_key_reads(etcd: Etcd) -> None:
    """kube's GuaranteedUpdate writes nothing for an update that changes no byte,
    unless the value was read through a provider that does not write (stale):
    then the write is what re-encrypts it (`kubectl replace` after a rotation)."""
    prefix = f"/unchanged-{os.urandom(4).hex()}"
    before = EtcdStorage(etcd, prefix, transformers=Transformers([Rule(EVERYTHING, (OLD,))]))
    after = EtcdStorage(
        etcd, prefix, transformers=Transformers([Rule(EVERYTHING, (NEW, OLD, Identity()))])
    )
    body = {"apiVersion": "v1", "kind": "Thing", "metadata": {"name": "t"}, "data": {"n": "0"}}
    created = await before.create("/things/ns/t", orjson.dumps(body))
    assert not created.stale

    async def unchanged(current: storage_pb2.Object) -> bytes:
        return current.value

    read = await after.get("/things/ns/t")
    assert read.stale and read.resource_version == created.resource_version
    rewritten = await guaranteed_update(after, "/things/ns/t", unchanged)
    assert rewritten.resource_version > created.resource_version and not rewritten.stale
    stored = (await etcd.range(f"{prefix}/things/ns/t".encode())).kvs[0].value
    assert stored.startswith(NEW.prefix)
    # Now read through the key that writes: nothing to do.
    kept = await guaranteed_update(after, "/things/ns/t", unchanged)
    assert kept.resource_version == rewritten.resource_version
    assert (await etcd.range(f"{prefix}/things/ns/t".encode())).kvs[0].mod_revision == (
        rewritten.resource_version
    )
