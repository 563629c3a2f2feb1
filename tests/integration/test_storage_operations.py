"""Operating the storage layer: the compactor's coordination, etcd endpoints
that fail over, TLS with client certificates, and an unreachable etcd that
fails fast instead of hanging."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import grpc
import pytest

from services.storage.compactor import COMPACT_REV_KEY, Compactor, compact_once
from services.storage.store import EtcdStorage
from strata.dev import free_port
from strata.etcd import Etcd, EtcdTLS
from strata.storage import Expired, GetOptions, Unavailable
from tests.support.etcd import EtcdProcess
from tests.support.tls import make_certificates

OBJ = b'{"apiVersion":"v1","kind":"Thing","metadata":{"name":"a"}}'


async def test_replicas_compact_once_per_round(etcd: Etcd) -> None:
    await etcd.delete_range(COMPACT_REV_KEY)
    # Round one: both replicas start knowing version 0; only the first wins.
    first = await compact_once(etcd, 0, 0)
    second = await compact_once(etcd, 0, 0)
    assert first[0] == 1 and not first[2]  # nothing recorded yet to compact to
    assert second[0] == 1 and not second[2]  # lost the race, learned the version
    # Round two: the winner compacts to the revision the previous round saw.
    put = await etcd.put(b"/compaction-probe", b"x")
    won = await compact_once(etcd, 1, put.header.revision)
    lost = await compact_once(etcd, 1, put.header.revision)
    assert won[2] and not lost[2] and won[0] == lost[0] == 2
    stored = await etcd.range(COMPACT_REV_KEY)
    assert stored.kvs[0].version == 2 and stored.kvs[0].value == str(put.header.revision).encode()
    with pytest.raises(grpc.aio.AioRpcError, match="compacted"):
        await etcd.range(b"/compaction-probe", revision=put.header.revision - 1)


async def test_compactor_forgets_history_older_than_an_interval(etcd: Etcd) -> None:
    await etcd.delete_range(COMPACT_REV_KEY)
    storage = EtcdStorage(etcd, "/compactor-test")
    created = await storage.create("/things/ns/a", OBJ)
    task = asyncio.create_task(Compactor(etcd, 0.2).run())
    try:
        with pytest.raises(Expired):
            async with asyncio.timeout(10):
                while True:
                    await storage.get(
                        "/things/ns/a",
                        GetOptions(
                            resource_version=str(created.resource_version),
                            resource_version_match="Exact",
                        ),
                    )
                    await asyncio.sleep(0.1)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    assert (await storage.get("/things/ns/a")).name == "a"


async def test_unreachable_etcd_fails_fast(etcd: Etcd) -> None:
    dead = Etcd(f"127.0.0.1:{free_port()}", request_timeout=2)
    storage = EtcdStorage(dead, "/nowhere")
    started = time.monotonic()
    for call in (storage.get("/things/ns/a"), storage.create("/things/ns/a", OBJ)):
        with pytest.raises(Unavailable):
            await call
    assert time.monotonic() - started < 15
    await dead.close()


async def test_reads_fail_over_to_the_next_endpoint(etcd_process: EtcdProcess) -> None:
    client = Etcd(f"127.0.0.1:{free_port()},{etcd_process.address}", request_timeout=3)
    storage = EtcdStorage(client, "/failover")
    assert (await storage.get("/things/ns/x", GetOptions(ignore_not_found=True))).value == b""
    created = await storage.create("/things/ns/failover", OBJ)
    assert (await storage.get("/things/ns/failover")).resource_version == created.resource_version
    await client.close()


async def test_tls_with_client_certificates(tmp_path: Path) -> None:
    certs = tmp_path / "certs"
    certs.mkdir()
    make_certificates(certs)
    process = EtcdProcess(tmp_path / "data", tls_dir=certs)
    process.start()
    try:
        trusted = Etcd(
            f"https://{process.address}",
            tls=EtcdTLS(
                ca_file=certs / "ca.crt",
                cert_file=certs / "client.crt",
                key_file=certs / "client.key",
            ),
        )
        storage = EtcdStorage(trusted, "/tls")
        created = await storage.create("/things/ns/a", OBJ)
        assert (await storage.get("/things/ns/a")).resource_version == created.resource_version
        await trusted.close()
        # Without a client certificate etcd refuses the connection.
        anonymous = Etcd(
            f"https://{process.address}", tls=EtcdTLS(ca_file=certs / "ca.crt"), request_timeout=3
        )
        with pytest.raises(Unavailable):
            await EtcdStorage(anonymous, "/tls").get("/things/ns/a")
        await anonymous.close()
    finally:
        process.stop()
