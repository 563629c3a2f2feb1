"""Readiness from the watch caches up: the cacher reports NOT_SERVING on the
standard health service while a cache it started has not synced, the registry
follows its storage, and the gateway's /readyz renders it as kube does. Each
on a real etcd behind a real storage service, over real gRPC."""

from __future__ import annotations

import asyncio
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import AsyncGenerator, AsyncIterator

import aiohttp
import grpc
import pytest
from aiohttp.test_utils import TestClient, TestServer
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from services.cacher.storage import CachedStorage
from services.gateway.app import build_app
from services.registry.builtin.resources import CONFIGMAPS
from services.registry.readiness import storage_readiness
from strata.api.wire import REGISTRY_SERVICE_NAME
from strata.dev import System
from strata.service import ETCD_READINESS, mirror_readiness
from strata.storage import (
    SERVICE_NAME,
    GrpcStorage,
    ListOptions,
    ListResult,
    StorageServicer,
    add_to_server,
)
from tests.support import hops

TOKEN = "readiness-token"


class GatedLists(GrpcStorage):
    """The storage service, whose lists wait until the gate opens: a cache over
    it cannot sync before then."""

    def __init__(self, channel: grpc.aio.Channel) -> None:
        super().__init__(channel)
        self.gate = asyncio.Event()

    async def list(self, prefix: str, opts: ListOptions = ListOptions()) -> ListResult:
        await self.gate.wait()
        return await super().list(prefix, opts)


@pytest.fixture
async def gated(storage_address: str) -> AsyncIterator[GatedLists]:
    channel = hops.dial(storage_address)
    upstream = GatedLists(channel)
    yield upstream
    await upstream.close()
    await channel.close()


async def next_value(changes: AsyncIterator[bool], within: float = 5.0) -> bool:
    return await asyncio.wait_for(anext(changes), within)


async def test_cacher_is_ready_once_every_started_cache_has_synced(gated: GatedLists) -> None:
    cached = CachedStorage(gated)
    changes: AsyncGenerator[bool, None] = cached.readiness()
    try:
        assert await next_value(changes) is True  # nothing to sync yet
        cached.cache("/configmaps/")
        assert await next_value(changes) is False
        gated.gate.set()
        assert await next_value(changes) is True
        assert cached.ready()
    finally:
        await changes.aclose()
        await cached.stop()


async def _cacher_server(cached: CachedStorage) -> tuple[grpc.aio.Server, str, asyncio.Task[None]]:
    server = grpc.aio.server()
    add_to_server(StorageServicer(cached), server)
    health_servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    mirror = asyncio.create_task(
        mirror_readiness(health_servicer, SERVICE_NAME, cached.readiness())
    )
    return server, f"127.0.0.1:{port}", mirror


async def test_registry_follows_its_cacher(gated: GatedLists) -> None:
    cached = CachedStorage(gated)
    server, address, mirror = await _cacher_server(cached)
    channel = grpc.aio.insecure_channel(address)
    storage = GrpcStorage(channel)
    changes: AsyncGenerator[bool, None] = storage_readiness(channel, storage, (CONFIGMAPS,))
    try:
        waiting = asyncio.ensure_future(anext(changes))
        await asyncio.sleep(0.5)
        # The registry's warm-up list started the cache, which cannot sync yet.
        assert "/configmaps/" in {c.root for c in cached.caches()}
        assert not waiting.done() or waiting.result() is False
        gated.gate.set()
        seen = [await asyncio.wait_for(waiting, 10)]
        while not seen[-1]:
            seen.append(await next_value(changes, 10))
        assert seen[-1] is True and cached.ready()
        # A cacher that goes away makes the registry unready.
        await server.stop(grace=None)
        assert await next_value(changes, 10) is False
    finally:
        await changes.aclose()
        mirror.cancel()
        await storage.close()
        await channel.close()
        await server.stop(grace=None)
        await cached.stop()


@pytest.fixture
async def registry_health() -> AsyncIterator[tuple[health.aio.HealthServicer, str]]:
    """A gRPC server standing where the registry is, with only its health service."""
    server = grpc.aio.server()
    servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    await servicer.set("", health_pb2.HealthCheckResponse.SERVING)
    await servicer.set(ETCD_READINESS, health_pb2.HealthCheckResponse.SERVING)
    yield servicer, f"127.0.0.1:{port}"
    await server.stop(grace=None)


async def test_readyz_reports_unsynced_watch_caches(
    registry_health: tuple[health.aio.HealthServicer, str],
) -> None:
    servicer, address = registry_health
    channel = grpc.aio.insecure_channel(address)
    app = build_app(registry_channel=channel, admin_token=TOKEN, server_address=address)
    async with TestClient(TestServer(app, host="127.0.0.1")) as client:
        await servicer.set(REGISTRY_SERVICE_NAME, health_pb2.HealthCheckResponse.NOT_SERVING)
        response = await client.get("/readyz")
        assert response.status == 500
        assert await response.text() == (
            "[+]ping ok\n[+]etcd ok\n[+]registry ok\n[-]watch-cache failed: reason withheld\n"
            "readyz check failed\n"
        )
        assert response.headers["Content-Type"] == "text/plain; charset=utf-8"
        # Excluding the failing check makes it pass; a single check says why it fails.
        excluded = await client.get("/readyz", params={"exclude": "watch-cache"})
        assert excluded.status == 200 and await excluded.text() == "ok"
        auth = {"Authorization": f"Bearer {TOKEN}"}
        single = await client.get("/readyz/watch-cache", headers=auth)
        assert single.status == 500
        assert (await single.text()).startswith("internal server error: the watch caches")
        # /livez does not depend on the caches.
        assert (await client.get("/livez")).status == 200

        await servicer.set(REGISTRY_SERVICE_NAME, health_pb2.HealthCheckResponse.SERVING)
        ready = await client.get("/readyz")
        assert ready.status == 200 and await ready.text() == "ok"
        # etcd away (as storage, passed on by each hop, says): not ready, yet live.
        await servicer.set(ETCD_READINESS, health_pb2.HealthCheckResponse.NOT_SERVING)
        away = await client.get("/readyz", params={"verbose": "1"})
        assert away.status == 500 and "[-]etcd failed: reason withheld\n" in await away.text()
        assert (await client.get("/livez")).status == 200
        await servicer.set(ETCD_READINESS, health_pb2.HealthCheckResponse.SERVING)
        await servicer.set("", health_pb2.HealthCheckResponse.NOT_SERVING)
        down = await client.get("/readyz", params={"verbose": "1"})
        assert down.status == 500 and "[-]registry failed: reason withheld\n" in await down.text()
    await channel.close()


async def test_readyz_verbose_on_the_running_system(http: aiohttp.ClientSession) -> None:
    async with http.get("/readyz", params={"verbose": "", "exclude": "nothing"}) as response:
        assert response.status == 200
        assert await response.text() == (
            "[+]ping ok\n[+]etcd ok\n[+]registry ok\n[+]watch-cache ok\n"
            "warn: some health checks cannot be excluded: no matches for nothing\n"
            "readyz check passed\n"
        )
    async with http.get("/readyz/watch-cache") as response:
        assert response.status == 200 and await response.text() == "ok"
    async with http.get("/readyz/nothing") as response:
        assert response.status == 404


def _readyz(system: System) -> tuple[int, str]:
    assert system.endpoints is not None
    context = ssl.create_default_context(cafile=str(system.ca_file))
    url = f"{system.endpoints.gateway}/readyz?verbose"
    try:
        with urllib.request.urlopen(url, context=context, timeout=10) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def _until(system: System, wanted: int, seconds: float = 30) -> tuple[int, str]:
    deadline = time.monotonic() + seconds
    while (got := _readyz(system))[0] != wanted and time.monotonic() < deadline:
        time.sleep(0.3)
    return got


def test_readyz_tells_the_truth_about_etcd(tmp_path_factory: pytest.TempPathFactory) -> None:
    """With etcd stopped the gateway is not ready (storage sees it, each hop
    passes it on: kube's "etcd" check), yet live; with etcd back it is ready."""
    system = System(tmp_path_factory.mktemp("etcd-away"), gateway_port=0)
    system.start()
    try:
        assert _until(system, 200)[0] == 200
        system.stop_one("etcd")
        status, text = _until(system, 500)
        assert status == 500 and "[-]etcd failed: reason withheld\n" in text, text
        system.start_one("etcd")
        status, text = _until(system, 200)
        assert status == 200 and "[+]etcd ok\n" in text, text
    finally:
        system.stop()
