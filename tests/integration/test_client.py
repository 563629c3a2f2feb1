"""strata.client against the running system, through the gateway: the
dynamic client's verbs and typed errors, discovery's name resolution, and
informers (a paginated initial sync of 5,000 objects, every handler seeing
every update in order, late handlers replayed, indexes and listers, resync,
bookmarks carrying an idle informer across watch timeouts without a relist)."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest

from strata.client import (
    AlreadyExists,
    BadRequest,
    Conflict,
    DiscoveryClient,
    DynamicClient,
    EventHandler,
    Invalid,
    NotFound,
    RegistryResourceClient,
    Resource,
    ResourceClient,
    RestClient,
    SharedIndexInformer,
    SharedInformerFactory,
    load_config,
)
from strata.dev import System
from strata.etcd import Etcd, prefix_end

Obj = dict[str, Any]
CONFIGMAPS = Resource(version="v1", resource="configmaps", kind="ConfigMap")
NAMESPACES = Resource(version="v1", resource="namespaces", namespaced=False, kind="Namespace")


# What the server warned the module's client of.
WARNINGS: list[str] = []


@pytest.fixture(scope="module")
async def rest(system: System) -> AsyncIterator[RestClient]:
    async with RestClient(load_config(system.kubeconfig), warning_handler=WARNINGS.extend) as c:
        yield c


async def namespace(rest: RestClient, prefix: str) -> str:
    name = f"{prefix}-{int(time.time() * 1000) % 10**8}"
    await (
        DynamicClient(rest)
        .resource(NAMESPACES)
        .create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    )
    return name


def config_map(name: str, **labels: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "labels": labels},
        "data": {"v": "0"},
    }


async def eventually(check: Any, within: float = 20.0) -> None:
    deadline = time.monotonic() + within
    while not check():
        assert time.monotonic() < deadline, "the condition did not hold in time"
        await asyncio.sleep(0.05)


async def test_the_dynamic_client_speaks_every_verb(rest: RestClient) -> None:
    ns = await namespace(rest, "dyn")
    cms = DynamicClient(rest).resource(CONFIGMAPS)
    created = await cms.create(config_map("a", app="web"), ns)
    assert created["metadata"]["namespace"] == ns
    with pytest.raises(AlreadyExists):
        await cms.create(config_map("a"), ns)
    stale = {**created, "data": {"v": "stale"}}
    updated = await cms.update({**created, "data": {"v": "1"}}, ns)
    with pytest.raises(Conflict):
        await cms.update(stale, ns)
    patched = await cms.patch("a", {"data": {"w": "2"}}, ns)
    assert patched["data"] == {"v": "1", "w": "2"}
    patched = await cms.patch("a", [{"op": "remove", "path": "/data/w"}], ns, patch_type="json")
    patched = await cms.patch(
        "a", {"metadata": {"labels": {"tier": "x"}}}, ns, patch_type="strategic"
    )
    assert patched["metadata"]["labels"] == {"app": "web", "tier": "x"}
    applied = await cms.apply(
        config_map("b", app="api") | {"metadata": {"name": "b", "namespace": ns}},
        field_manager="me",
    )
    assert applied["metadata"]["managedFields"][0]["manager"] == "me"
    assert (await cms.get("a", ns))["metadata"]["resourceVersion"] > updated["metadata"][
        "resourceVersion"
    ]
    page = await cms.list(ns, label_selector="app=web")
    assert [i["metadata"]["name"] for i in page["items"]] == ["a"]
    with pytest.raises(Invalid) as invalid:
        await cms.create({**config_map("Bad_Name")}, ns)
    assert invalid.value.causes[0].field == "metadata.name"
    await cms.create({**config_map("w"), "dta": {}}, ns)
    assert 'unknown field "dta"' in WARNINGS
    await cms.delete("a", ns)
    with pytest.raises(NotFound):
        await cms.get("a", ns)
    await cms.delete_collection(ns)
    assert (await cms.list(ns))["items"] == []


async def test_watch_yields_events_and_discovery_resolves_names(rest: RestClient) -> None:
    ns = await namespace(rest, "watch")
    cms = DynamicClient(rest).resource(CONFIGMAPS)
    start = (await cms.list(ns))["metadata"]["resourceVersion"]
    await cms.create(config_map("x"), ns)
    await cms.delete("x", ns)
    events = []
    async for event in cms.watch(ns, resource_version=start, timeout_seconds=2):
        events.append((event.type, event.object["metadata"]["name"]))
        if len(events) == 2:
            break
    assert events == [("ADDED", "x"), ("DELETED", "x")]

    discovery = DiscoveryClient(rest)
    for name in ("cm", "configmaps", "ConfigMap", "configmap"):
        assert (await discovery.resolve(name)).resource == "configmaps"
    deploy = await discovery.resolve("deploy")
    assert (deploy.group, deploy.resource, deploy.namespaced) == ("apps", "deployments", True)
    assert (await discovery.resolve("deployments.apps")).version == "v1"
    assert (await discovery.resolve("deployments.v1.apps")).kind == "Deployment"
    assert not (await discovery.resolve("ns")).namespaced
    with pytest.raises(NotFound, match='doesn\'t have a resource type "nothings"'):
        await discovery.resolve("nothings")


class CountingClient(ResourceClient):
    """A ResourceClient that records the size of every page it lists."""

    def __init__(self, rest: RestClient, resource: Resource) -> None:
        super().__init__(rest, resource)
        self.pages: list[int] = []

    async def list(self, *args: Any, **kwargs: Any) -> Obj:
        page = await super().list(*args, **kwargs)
        self.pages.append(len(page["items"]))
        return page


class Recorder:
    """Everything a handler is told, in order."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []

    def handler(self) -> EventHandler:
        def name(obj: Any) -> str:
            obj = getattr(obj, "obj", obj)
            return str(obj["metadata"]["name"])

        def rv(obj: Obj) -> str:
            return str(obj["metadata"].get("resourceVersion", ""))

        return EventHandler(
            on_add=lambda obj, initial: self.events.append(("add", name(obj), rv(obj))),
            on_update=lambda old, new: self.events.append(("update", name(new), rv(new))),
            on_delete=lambda obj: self.events.append(("delete", name(obj), "")),
        )


async def test_an_informer_syncs_thousands_in_pages_and_tells_every_handler_in_order(
    rest: RestClient, system_etcd: Etcd
) -> None:
    ns = await namespace(rest, "inf")
    cms = DynamicClient(rest).resource(CONFIGMAPS)
    # 5,000 ConfigMaps as storage keeps them, written to etcd directly: through
    # the API they would take most of a minute on this machine, and what is
    # tested here is reading them.
    prefix = f"/registry/configmaps/{ns}/".encode()
    semaphore = asyncio.Semaphore(32)

    async def seed(i: int) -> None:
        obj = config_map(f"cm-{i:04d}", app="a" if i % 2 else "b")
        obj["metadata"] |= {
            "namespace": ns,
            "uid": str(uuid.uuid4()),
            "creationTimestamp": "2026-01-01T00:00:00Z",
        }
        async with semaphore:
            await system_etcd.put(prefix + f"cm-{i:04d}".encode(), orjson.dumps(obj))

    await asyncio.gather(*(seed(i) for i in range(5000)))
    counting = CountingClient(rest, CONFIGMAPS)
    informer = SharedIndexInformer(
        counting,
        namespace=ns,
        indexers={"app": lambda o: [o["metadata"]["labels"]["app"]]},
    )
    pages = counting.pages
    first, second = Recorder(), Recorder()
    informer.add_event_handler(first.handler())
    informer.add_event_handler(second.handler())
    informer.start()
    try:
        assert await informer.wait_for_cache_sync(60)
        assert pages == [500] * 10
        assert len(informer.indexer) == 5000
        assert len(first.events) == 5000 and all(e[0] == "add" for e in first.events)
        # Updates in a row to one object reach both handlers, each in order.
        obj = await cms.get("cm-0001", ns)
        for n in range(1, 21):
            obj = await cms.update({**obj, "data": {"v": str(n)}}, ns)
        await cms.delete("cm-0002", ns)
        await eventually(lambda: ("delete", "cm-0002", "") in second.events[-25:])
        for recorder in (first, second):
            updates = [rv for kind, name, rv in recorder.events if kind == "update"]
            assert len(updates) == 20 and updates == sorted(updates, key=int)
            assert updates[-1] == obj["metadata"]["resourceVersion"]
        # Indexes and listers read the informer's store.
        assert len(informer.indexer.by_index("app", "a")) == 2500
        lister = informer.lister().namespaced(ns)
        assert lister.get("cm-0001")["data"] == {"v": "20"}
        assert len(lister.list("app=b")) == 2499  # cm-0002 is gone
        with pytest.raises(NotFound):
            lister.get("cm-0002")
        # A handler added now first hears of everything there is.
        late = Recorder()
        informer.add_event_handler(late.handler())
        await eventually(lambda: len(late.events) == 4999)
        assert {kind for kind, _, _ in late.events} == {"add"}
        assert informer.reflector.lists == 1
    finally:
        await informer.stop()
        await system_etcd.delete_range(prefix, prefix_end(prefix))


async def test_resync_redelivers_and_bookmarks_spare_idle_informers_a_relist(
    rest: RestClient,
) -> None:
    ns, elsewhere = await namespace(rest, "idle"), await namespace(rest, "busy")
    cms = DynamicClient(rest).resource(CONFIGMAPS)
    await cms.create(config_map("only"), ns)
    factory = SharedInformerFactory(DynamicClient(rest), namespace=ns)
    informer = factory.informer_for(CONFIGMAPS)
    assert factory.informer_for(CONFIGMAPS) is informer  # one per resource
    # Watches end after 4 s; the cacher bookmarks them 2 s before.
    informer.reflector.watch_timeout = lambda: 4
    resyncing = Recorder()
    informer.add_event_handler(resyncing.handler(), resync_period=1.0)
    factory.start()
    try:
        assert (await factory.wait_for_cache_sync(30)) == {CONFIGMAPS: True}
        synced_at = informer.reflector.last_sync_resource_version
        await cms.create(config_map("noise"), elsewhere)  # moves the revision on
        await eventually(lambda: informer.reflector.watches >= 3, within=30)
        assert int(informer.reflector.last_sync_resource_version) > int(synced_at)
        assert informer.reflector.lists == 1
        # The resync handler heard the one object again and again, unchanged.
        resynced = [e for e in resyncing.events if e[0] == "update"]
        assert len(resynced) >= 2 and {e[1] for e in resynced} == {"only"}
    finally:
        await factory.shutdown()


async def test_a_page_iterator_reads_every_item(rest: RestClient) -> None:
    ns = await namespace(rest, "pages")
    cms: ResourceClient = DynamicClient(rest).resource(CONFIGMAPS)
    await asyncio.gather(*(cms.create(config_map(f"p{i}"), ns) for i in range(25)))
    names = [o["metadata"]["name"] async for o in cms.iterate(ns, page_size=10)]
    assert sorted(names) == sorted(f"p{i}" for i in range(25))


async def test_informers_run_on_the_registry_api_too(rest: RestClient, system: System) -> None:
    assert system.endpoints is not None
    ns = await namespace(rest, "grpc")
    cms = DynamicClient(rest).resource(CONFIGMAPS)
    await cms.create(config_map("first", app="x"), ns)
    async with system.grpc_channel("registry", "registry") as channel:
        registry = RegistryResourceClient(channel, CONFIGMAPS)
        assert (await registry.get("first", ns))["metadata"]["labels"] == {"app": "x"}
        with pytest.raises(NotFound):
            await registry.get("absent", ns)
        with pytest.raises(BadRequest):
            await registry.list(ns, label_selector="a in (")
        informer = SharedIndexInformer(registry, namespace=ns, page_size=1)
        seen = Recorder()
        informer.add_event_handler(seen.handler())
        informer.start()
        try:
            assert await informer.wait_for_cache_sync(30)
            await cms.create(config_map("second"), ns)
            await cms.patch("first", {"data": {"v": "1"}}, ns)
            await cms.delete("second", ns)
            await eventually(lambda: len(seen.events) == 4)
            assert [(kind, name) for kind, name, _ in seen.events] == [
                ("add", "first"),
                ("add", "second"),
                ("update", "first"),
                ("delete", "second"),
            ]
        finally:
            await informer.stop()
        # Writes go through the Registry API as well, refusals typed.
        made = await registry.create(config_map("fourth"), ns, field_manager="grpc-test")
        assert made["metadata"]["managedFields"][0]["manager"] == "grpc-test"
        changed = await registry.update({**made, "data": {"v": "9"}})
        assert changed["data"] == {"v": "9"}
        with pytest.raises(Conflict):
            await registry.update({**made, "data": {"v": "stale"}})
        with pytest.raises(AlreadyExists):
            await registry.create(config_map("fourth"), ns)
        with pytest.raises(Conflict):
            await registry.delete("fourth", ns, uid="not-its-uid")
        await registry.delete("fourth", ns, resource_version=changed["metadata"]["resourceVersion"])
        with pytest.raises(NotFound):
            await registry.get("fourth", ns)
        # Pages follow continue tokens, every page at the first one's revision.
        await cms.create(config_map("third"), ns)
        first_page = await registry.list(ns, limit=1)
        token = first_page["metadata"]["continue"]
        second_page = await registry.list(ns, limit=1, continue_=token)
        names = [p["items"][0]["metadata"]["name"] for p in (first_page, second_page)]
        assert names == ["first", "third"] and "continue" not in second_page["metadata"]
        assert (
            first_page["metadata"]["resourceVersion"] == second_page["metadata"]["resourceVersion"]
        )


async def test_a_registry_client_can_see_only_owned_or_deleting_objects(
    rest: RestClient, system: System
) -> None:
    """What the garbage collector's informers run on: objects with ownerReferences
    or a deletionTimestamp, one moving in or out seen as added or deleted."""
    assert system.endpoints is not None
    ns = await namespace(rest, "owned")
    cms = DynamicClient(rest).resource(CONFIGMAPS)
    owner = await cms.create(config_map("owner"), ns)
    reference = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner"}
    reference["uid"] = owner["metadata"]["uid"]
    owned = {"metadata": {"ownerReferences": [reference]}}
    dependent = config_map("dependent")
    dependent["metadata"]["ownerReferences"] = [reference]
    await cms.create(dependent, ns)
    await cms.create(config_map("other"), ns)
    async with system.grpc_channel("registry", "registry") as channel:
        registry = RegistryResourceClient(channel, CONFIGMAPS, owned_or_deleting=True)
        listed = await registry.list(ns)
        assert [o["metadata"]["name"] for o in listed["items"]] == ["dependent"]
        informer = SharedIndexInformer(registry, namespace=ns)
        seen = Recorder()
        informer.add_event_handler(seen.handler())
        informer.start()
        try:
            assert await informer.wait_for_cache_sync(30)
            await cms.patch("other", {"data": {"v": "1"}}, ns)  # not seen
            await cms.patch("other", owned, ns)
            await cms.patch("dependent", {"metadata": {"ownerReferences": None}}, ns)
            await cms.patch("owner", {"metadata": {"finalizers": ["example.com/hold"]}}, ns)
            await cms.delete("owner", ns)
            await eventually(lambda: len(seen.events) == 4)
            assert [(kind, name) for kind, name, _ in seen.events] == [
                ("add", "dependent"),
                ("add", "other"),
                ("delete", "dependent"),
                ("add", "owner"),
            ]
            assert sorted(o["metadata"]["name"] for o in informer.indexer.list()) == [
                "other",
                "owner",
            ]
        finally:
            await informer.stop()
            # Leave nothing for the garbage collector to do during later tests
            # that check what a request alone writes.
            await cms.patch("other", {"metadata": {"ownerReferences": None}}, ns)
            await cms.patch("owner", {"metadata": {"finalizers": None}}, ns)


async def test_watch_list_mode_syncs_without_a_list(rest: RestClient) -> None:
    ns = await namespace(rest, "wl")
    cms = DynamicClient(rest).resource(CONFIGMAPS)
    for name in ("a", "b"):
        await cms.create(config_map(name), ns)
    counting = CountingClient(rest, CONFIGMAPS)
    informer = SharedIndexInformer(counting, namespace=ns, use_watch_list=True)
    informer.start()
    try:
        assert await informer.wait_for_cache_sync(30)
        assert sorted(informer.indexer.list_keys()) == [f"{ns}/a", f"{ns}/b"]
        # A watch-list informer lists only when the server cannot do without.
        assert counting.pages == [] and informer.reflector.lists == 1
        await cms.create(config_map("c"), ns)
        await eventually(lambda: len(informer.indexer) == 3)
    finally:
        await informer.stop()
