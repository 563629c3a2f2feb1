"""An informer outlives its server's trouble, against a system of its own:
it resumes its watch after the gateway restarts (no relist, nothing missed),
and when the resourceVersion it resumes from has been compacted away, or is
older than a restarted watch cache's window though etcd still has it (410
"too old resource version", as kube's cacher answers after an apiserver
restart), it lists again, reporting an object deleted meanwhile as
DeletedFinalStateUnknown."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from strata.client import (
    DeletedFinalStateUnknown,
    DynamicClient,
    EventHandler,
    Resource,
    RestClient,
    SharedIndexInformer,
    load_config,
)
from strata.dev import System
from strata.proto.registry.v1 import registry_pb2, registry_pb2_grpc

CONFIGMAPS = Resource(version="v1", resource="configmaps", kind="ConfigMap")
NAMESPACES = Resource(version="v1", resource="namespaces", namespaced=False)


@pytest.fixture(scope="module")
def own_system(tmp_path_factory: pytest.TempPathFactory) -> Iterator[System]:
    home: Path = tmp_path_factory.mktemp("informer-home")
    system = System(home, gateway_port=0)
    system.start()
    yield system
    system.stop()


@pytest.fixture(scope="module")
async def rest(own_system: System) -> AsyncIterator[RestClient]:
    async with RestClient(load_config(own_system.kubeconfig)) as client:
        yield client


async def eventually(check: Any, within: float = 60.0) -> None:
    deadline = time.monotonic() + within
    while not check():
        assert time.monotonic() < deadline, "the condition did not hold in time"
        await asyncio.sleep(0.05)


async def test_an_informer_resumes_after_restarts_and_relists_after_410(
    own_system: System, rest: RestClient
) -> None:
    assert own_system.endpoints is not None
    dynamic = DynamicClient(rest)
    await dynamic.resource(NAMESPACES).create({"metadata": {"name": "apps"}})
    cms = dynamic.resource(CONFIGMAPS)
    for name in ("a", "b", "c"):
        await cms.create({"metadata": {"name": name}, "data": {"v": "0"}}, "apps")
    events: list[tuple[str, Any]] = []
    informer = SharedIndexInformer(cms, namespace="apps")
    informer.reflector.max_backoff = 1.0
    informer.add_event_handler(
        EventHandler(
            on_add=lambda obj, _: events.append(("add", obj)),
            on_update=lambda old, new: events.append(("update", new)),
            on_delete=lambda obj: events.append(("delete", obj)),
        )
    )
    informer.start()
    try:
        assert await informer.wait_for_cache_sync(30)
        assert informer.reflector.lists == 1

        # The gateway restarts: the watch resumes where it was.
        await asyncio.to_thread(own_system.restart, "gateway")
        await cms.create({"metadata": {"name": "d"}}, "apps")
        await eventually(
            lambda: any(k == "add" and o["metadata"]["name"] == "d" for k, o in events)
        )
        assert informer.reflector.lists == 1

        # Down again; meanwhile b is deleted (through the registry),
        # etcd compacts, and the watch cache starts over: resuming is 410.
        await asyncio.to_thread(own_system.stop_one, "gateway")
        ref = registry_pb2.ResourceRef(version="v1", resource="configmaps", namespace="apps")
        async with own_system.grpc_channel("registry", "gateway") as channel:
            registry = registry_pb2_grpc.RegistryStub(channel)
            await registry.Delete(registry_pb2.DeleteRequest(resource=ref, name="b"))
        etcd = own_system.etcd_client()
        try:
            await etcd.compact((await etcd.range(b"/", count_only=True)).header.revision)
        finally:
            await etcd.close()
        await asyncio.to_thread(own_system.restart, "cacher")
        await asyncio.to_thread(own_system.start_one, "gateway")
        await eventually(lambda: informer.reflector.lists == 2)
        await eventually(lambda: any(k == "delete" for k, _ in events))
        ((_, vanished),) = [(k, o) for k, o in events if k == "delete"]
        assert isinstance(vanished, DeletedFinalStateUnknown)
        assert vanished.key == "apps/b" and vanished.obj["metadata"]["name"] == "b"
        assert sorted(informer.indexer.list_keys()) == ["apps/a", "apps/c", "apps/d"]
    finally:
        await informer.stop()


async def _delete_behind_the_gateway(system: System, namespace: str, name: str) -> None:
    """Delete through the registry, so a client of the (stopped) gateway misses it."""
    assert system.endpoints is not None
    ref = registry_pb2.ResourceRef(version="v1", resource="configmaps", namespace=namespace)
    async with system.grpc_channel("registry", "gateway") as channel:
        registry = registry_pb2_grpc.RegistryStub(channel)
        await registry.Delete(registry_pb2.DeleteRequest(resource=ref, name=name))


async def test_an_informer_relists_when_a_restarted_cache_is_newer_than_its_watch(
    own_system: System, rest: RestClient
) -> None:
    dynamic = DynamicClient(rest)
    await dynamic.resource(NAMESPACES).create({"metadata": {"name": "shop"}})
    cms = dynamic.resource(CONFIGMAPS)
    for name in ("a", "b"):
        await cms.create({"metadata": {"name": name}}, "shop")
    deleted: list[Any] = []
    informer = SharedIndexInformer(cms, namespace="shop")
    informer.reflector.max_backoff = 1.0
    informer.add_event_handler(EventHandler(on_delete=deleted.append))
    informer.start()
    try:
        assert await informer.wait_for_cache_sync(30)
        assert informer.reflector.lists == 1
        # b goes while the informer cannot watch; the cacher restarts and lists
        # after that: the informer's resourceVersion is older than its window,
        # though etcd (not compacted) still has every revision since.
        await asyncio.to_thread(own_system.stop_one, "gateway")
        await _delete_behind_the_gateway(own_system, "shop", "b")
        await asyncio.to_thread(own_system.restart, "cacher")
        await asyncio.to_thread(own_system.start_one, "gateway")
        await eventually(lambda: informer.reflector.lists == 2)
        await eventually(lambda: bool(deleted))
        (vanished,) = deleted
        assert isinstance(vanished, DeletedFinalStateUnknown) and vanished.key == "shop/b"
        assert informer.indexer.list_keys() == ["shop/a"]
    finally:
        await informer.stop()
