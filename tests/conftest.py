"""Session fixtures: one real strata system (etcd plus the four services, as
`make run` starts them) with an OTLP receiver collecting its spans; and, for
the storage layer, the storage service and the cacher in this process, each
behind a real grpc.aio server on loopback over their own real etcd, reached
only through GrpcStorage exactly as the registry reaches them (over mutual TLS
with the caller checked: tests/support/hops.py)."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import aiohttp
import grpc
import pytest

from services.cacher.storage import CachedStorage
from services.storage.store import EtcdStorage
from strata.dev import OtlpReceiver, System
from strata.etcd import Etcd
from strata.storage import GrpcStorage, Storage, StorageServicer, add_to_server
from tests.support import hops
from tests.support.etcd import EtcdProcess
from tests.support.registry_tester import until
from tests.support.sessions import admin_session

# Under `make test` make's recursion state is in the environment, and a `make run`
# or `make -n protos` a test runs as a user would would take it for a sub-make
# ("make[1]: Entering directory ..."): the tests run make as from a shell.
for _variable in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS", "MAKEOVERRIDES"):
    os.environ.pop(_variable, None)


@pytest.fixture(scope="session")
def otlp() -> Iterator[OtlpReceiver]:
    receiver = OtlpReceiver()
    receiver.start()
    yield receiver
    receiver.stop()


@pytest.fixture(scope="session")
def system(tmp_path_factory: pytest.TempPathFactory, otlp: OtlpReceiver) -> Iterator[System]:
    home: Path = tmp_path_factory.mktemp("strata-home")
    env = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": otlp.endpoint,
        "OTEL_EXPORTER_OTLP_INSECURE": "true",
        "OTEL_BSP_SCHEDULE_DELAY": "200",
        "STRATA_STORAGE_OBJECTS_INTERVAL": "200ms",
    }
    system = System(home, gateway_port=0, env=env)
    system.start()
    yield system
    system.stop()


@pytest.fixture(scope="session")
async def http(system: System) -> AsyncIterator[aiohttp.ClientSession]:
    """An HTTPS session to the gateway, authenticated as the admin user."""
    async with admin_session(system) as session:
        # The registry's controllers fill the default roles in within seconds of
        # starting; tests that check a refused request left etcd alone begin after.
        for role in ("view", "edit", "admin"):
            path = f"/apis/rbac.authorization.k8s.io/v1/clusterroles/{role}"
            await until(session, path, lambda obj: obj.get("rules"), within=30)
        yield session


@pytest.fixture(scope="session")
async def system_etcd(system: System) -> AsyncIterator[Etcd]:
    """A client of the running system's own etcd (to check what a request changed)."""
    client = system.etcd_client()
    yield client
    await client.close()


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


async def _serve(storage: Storage, service: str) -> tuple[grpc.aio.Server, str]:
    server = hops.server(service)
    add_to_server(StorageServicer(storage), server)
    port = hops.listen(server, service)
    await server.start()
    return server, f"127.0.0.1:{port}"


@pytest.fixture(scope="session")
async def storage_address(etcd: Etcd) -> AsyncIterator[str]:
    storage = EtcdStorage(
        etcd, prefix="/strata-test", future_wait_seconds=0.5, progress_interval_seconds=0.5
    )
    server, address = await _serve(storage, "storage")
    yield address
    await server.stop(grace=None)


@pytest.fixture(scope="session")
async def cacher_address(storage_address: str) -> AsyncIterator[str]:
    upstream = hops.dial(storage_address, "cacher")
    cached = CachedStorage(GrpcStorage(upstream), bookmark_frequency=1.0)
    server, address = await _serve(cached, "cacher")
    yield address
    await server.stop(grace=None)
    await cached.stop()
    await upstream.close()


@pytest.fixture(scope="session", params=["storage", "storage-unary", "cacher"])
def implementation(request: pytest.FixtureRequest) -> str:
    """Which implementation of the storage contract a test runs against: the
    storage service (over the Pipeline stream, or one gRPC call per operation)
    or the cacher."""
    return str(request.param)


@pytest.fixture(scope="session")
async def store(
    implementation: str, storage_address: str, cacher_address: str
) -> AsyncIterator[GrpcStorage]:
    """The storage contract over gRPC, from the storage service or the cacher."""
    address = cacher_address if implementation == "cacher" else storage_address
    channel = hops.dial(address)
    client = GrpcStorage(channel, pipelined=implementation != "storage-unary")
    yield client
    await client.close()
    await channel.close()
