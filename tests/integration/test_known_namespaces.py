"""A create's namespace check reads the registry's namespace informer once it
has synced (kube's NamespaceLifecycle reads a lister), and storage while it has
not, for a namespace it does not hold, and for one deleted through this
registry lately (kube's force-live-lookup cache): a create right after the
delete is refused even before the informer has seen the namespace Terminating."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass

import aiohttp
import orjson
import pytest

from services.registry.builtin.resources import CONFIGMAPS, NAMESPACES
from services.registry.generic.store import Store
from services.registry.known_namespaces import KnownNamespaces
from strata.api.errors import StatusError
from strata.client import SharedIndexInformer
from strata.dev import System
from strata.proto.storage.v1 import storage_pb2
from strata.storage import GetOptions, GrpcStorage
from tests.support.registry_tester import answer, configmap, gone, new_namespace


class CountingStorage(GrpcStorage):
    """The cacher's storage, counting the reads of namespaces."""

    namespace_reads = 0

    async def get(self, key: str, opts: GetOptions = GetOptions()) -> storage_pb2.Object:
        if key.startswith(NAMESPACES.key_prefix("")):
            self.namespace_reads += 1
        return await super().get(key, opts)


@dataclass
class Registry:
    storage: CountingStorage
    known: KnownNamespaces
    informer: SharedIndexInformer
    namespaces: Store
    configmaps: Store

    async def create(self, namespace: str, name: str) -> None:
        await self.configmaps.create(namespace, orjson.dumps(configmap(name)))

    async def synced(self) -> None:
        self.informer.start()
        assert await self.informer.wait_for_cache_sync(30)


@asynccontextmanager
async def registry(system: System, force_live_lookup_seconds: float) -> AsyncIterator[Registry]:
    """Stores over the system's cacher whose namespace checks read an informer
    over the system's registry, not started yet."""
    assert system.endpoints is not None
    async with (
        system.grpc_channel("cacher", "registry") as cacher,
        system.grpc_channel("registry", "registry") as itself,
    ):
        storage = CountingStorage(cacher)
        known = KnownNamespaces(force_live_lookup_seconds)
        informer = known.follow(itself)
        try:
            yield Registry(
                storage,
                known,
                informer,
                Store(NAMESPACES, storage, namespaces=known),
                Store(CONFIGMAPS, storage, namespaces=known),
            )
        finally:
            await informer.stop()
            await storage.close()


async def eventually(check: Callable[[], bool], within: float = 20.0) -> None:
    deadline = time.monotonic() + within
    while not check():
        assert time.monotonic() < deadline, "the condition did not hold in time"
        await asyncio.sleep(0.02)


def phase(known: KnownNamespaces, namespace: str) -> str | None:
    cached = known.cached(namespace)
    return None if cached is None else str((cached.get("status") or {}).get("phase"))


async def test_creates_read_the_namespace_from_the_informer_once_it_holds_it(
    http: aiohttp.ClientSession, system: System
) -> None:
    namespace = await new_namespace(http, "known")
    async with registry(system, force_live_lookup_seconds=30) as r:
        await r.create(namespace, "before-sync")
        # The cacher's copy (and a live read when the cacher has not caught up).
        assert r.storage.namespace_reads >= 1

        await r.synced()
        await eventually(lambda: phase(r.known, namespace) == "Active")
        reads = r.storage.namespace_reads
        for i in range(3):
            await r.create(namespace, f"c{i}")
        assert r.storage.namespace_reads == reads

        # One the informer does not hold: the cacher's copy, then a live read.
        with pytest.raises(StatusError) as missing:
            await r.create("known-nowhere", "x")
        assert (missing.value.code, missing.value.message) == (
            404,
            'namespaces "known-nowhere" not found',
        )
        assert r.storage.namespace_reads == reads + 2


async def test_a_namespace_deleted_here_is_read_from_storage_for_a_while(
    http: aiohttp.ClientSession, system: System
) -> None:
    namespace = await new_namespace(http, "leaving")
    base = f"/api/v1/namespaces/{namespace}"
    # Something with a finalizer holds the namespace Terminating meanwhile.
    holder = configmap("held", metadata={"finalizers": ["example.com/hold"]})
    await answer(http, "POST", f"{base}/configmaps", 201, json=holder)
    async with registry(system, force_live_lookup_seconds=0.5) as r:
        await r.synced()
        await eventually(lambda: phase(r.known, namespace) == "Active")

        await r.namespaces.delete("", namespace, None)
        reads = r.storage.namespace_reads
        with pytest.raises(StatusError) as refused:
            await r.create(namespace, "late")
        assert (refused.value.code, refused.value.reason) == (403, "Forbidden")
        assert r.storage.namespace_reads > reads  # not the informer's copy

        # Once the while is over, the informer's copy says Terminating.
        await eventually(lambda: phase(r.known, namespace) == "Terminating")
        reads = r.storage.namespace_reads
        with pytest.raises(StatusError) as refused:
            await r.create(namespace, "later")
        assert refused.value.details["causes"][0]["reason"] == "NamespaceTerminating"
        assert r.storage.namespace_reads == reads

    held = await answer(http, "GET", f"{base}/configmaps/held", 200)
    held["metadata"]["finalizers"] = []
    await answer(http, "PUT", f"{base}/configmaps/held", 200, json=held)
    await gone(http, base)
