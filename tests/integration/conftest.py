"""The storage service and the cacher in this process, each behind a real
grpc.aio server on loopback, over a real etcd; tests reach them only through
GrpcStorage, exactly as the registry does."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import grpc
import pytest

from services.cacher.storage import CachedStorage
from services.storage.store import EtcdStorage
from strata.etcd import Etcd
from strata.proto.storage.v1 import storage_pb2_grpc
from strata.storage import GrpcStorage, Storage, StorageServicer
from tests.support.etcd import EtcdProcess


@pytest.fixture(scope="session")
def etcd_process(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EtcdProcess]:
    root: Path = tmp_path_factory.mktemp("etcd")
    process = EtcdProcess(root / "data")
    process.start()
    yield process
    process.stop()


@pytest.fixture(scope="session")
async def etcd(etcd_process: EtcdProcess) -> AsyncIterator[Etcd]:
    client = Etcd(etcd_process.address)
    yield client
    await client.close()


async def _serve(storage: Storage) -> tuple[grpc.aio.Server, str]:
    server = grpc.aio.server()
    storage_pb2_grpc.add_StorageServicer_to_server(StorageServicer(storage), server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    return server, f"127.0.0.1:{port}"


@pytest.fixture(scope="session")
async def storage_address(etcd: Etcd) -> AsyncIterator[str]:
    server, address = await _serve(EtcdStorage(etcd, prefix="/strata-test"))
    yield address
    await server.stop(grace=None)


@pytest.fixture(scope="session")
async def cacher_address(storage_address: str) -> AsyncIterator[str]:
    upstream = grpc.aio.insecure_channel(storage_address)
    cached = CachedStorage(GrpcStorage(upstream))
    server, address = await _serve(cached)
    yield address
    await server.stop(grace=None)
    await cached.stop()
    await upstream.close()


@pytest.fixture(scope="session", params=["storage", "cacher"])
async def store(
    request: pytest.FixtureRequest, storage_address: str, cacher_address: str
) -> AsyncIterator[GrpcStorage]:
    """The storage contract over gRPC, from the storage service or the cacher."""
    address = storage_address if request.param == "storage" else cacher_address
    channel = grpc.aio.insecure_channel(address)
    yield GrpcStorage(channel)
    await channel.close()
