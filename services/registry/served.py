"""Every Store the registry serves: the built-in resources' and, for each
Established CRD, one per served version.

The custom ones follow the CRDs: a strata.client informer on them over the
Registry API (the registry's own, started once it serves) installs and removes
their Stores as CRDs change; until it has synced, a list from the cache at most
REFRESH_SECONDS old stands in. A request naming a resource not known yet reads
its CRD live, so a CRD established a moment ago, through any replica, is served
at once.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import grpc
import orjson

from services.registry.builtin.resources import CUSTOM_RESOURCE_DEFINITIONS
from services.registry.controllers.informed import informer_for
from services.registry.extensions import custom
from services.registry.generic.store import Store
from services.registry.known_namespaces import KnownNamespaces
from strata import telemetry
from strata.api import errors
from strata.client import EventHandler, SharedIndexInformer
from strata.storage import GetOptions, KeyNotFound, ListOptions, Storage

REFRESH_SECONDS = 0.25
CRDS = CUSTOM_RESOURCE_DEFINITIONS

log = telemetry.get_logger("strata.registry.served")
Key = tuple[str, str, str]


class ServedStores:
    def __init__(
        self,
        built_in: list[Store],
        storage: Storage,
        refresh_seconds: float = REFRESH_SECONDS,
        *,
        namespaces: KnownNamespaces | None = None,
    ) -> None:
        self._built_in = {_key(s): s for s in built_in}
        self._storage = storage
        self._namespaces = namespaces
        self._refresh_seconds = refresh_seconds
        # By CRD name: the resourceVersion its Stores were made from, and them.
        self._by_crd: dict[str, tuple[int, list[Store]]] = {}
        self._custom: dict[Key, Store] = {}
        self._fetched = float("-inf")
        self._lock = asyncio.Lock()
        self._informer: SharedIndexInformer | None = None

    def follow_crds(self, registry: grpc.aio.Channel) -> SharedIndexInformer:
        """The informer that keeps the custom Stores current from now on (for
        the caller to start once the registry serves, and to stop)."""

        def changed(crd: Any, *_: Any) -> None:
            self._install(crd, int(crd["metadata"].get("resourceVersion") or 0))

        def deleted(crd: Any) -> None:
            obj = getattr(crd, "obj", crd)  # a DeletedFinalStateUnknown's last state
            self._uninstall(str(obj["metadata"]["name"]))

        self._informer = informer_for(registry, CRDS)
        self._informer.add_event_handler(
            EventHandler(on_add=changed, on_update=lambda _, crd: changed(crd), on_delete=deleted)
        )
        return self._informer

    async def lookup(self, group: str, version: str, resource: str) -> Store:
        """The Store serving a resource; 404 when none does."""
        key = (group, version, resource)
        if (store := self._built_in.get(key)) is not None:
            return store
        await self._refresh()
        store = self._custom.get(key)
        if store is None and "." in group:  # every custom group has a dot
            await self._read(f"{resource}.{group}")
            store = self._custom.get(key)
        if store is None:
            raise errors.path_not_found()
        return store

    async def every(self) -> list[Store]:
        """A Store for every group, version and resource served (as the cache
        has the CRDs now: discovery asks at most a few times a second)."""
        await self._refresh(0)
        return [*self._built_in.values(), *self._custom.values()]

    async def distinct(self) -> list[Store]:
        """One Store for each kind of object stored (a CRD's at its storage
        version where that is served): for controllers going through them all."""
        await self._refresh()
        chosen = [
            next((s for s in stores if not s.resource.storage_version), stores[0])
            for _, stores in self._by_crd.values()
            if stores
        ]
        return [*self._built_in.values(), *chosen]

    async def _refresh(self, max_age: float | None = None) -> None:
        if self._informer is not None and self._informer.has_synced():
            return  # the informer keeps the custom Stores current
        max_age = self._refresh_seconds if max_age is None else max_age
        if time.monotonic() - self._fetched < max_age:
            return
        async with self._lock:
            if time.monotonic() - self._fetched < max_age:
                return
            listed = await self._storage.list(CRDS.key_prefix(), ListOptions(resource_version="0"))
            names = set()
            for stored in listed.items:
                names.add(self._install(orjson.loads(stored.value), stored.resource_version))
            for name in set(self._by_crd) - names:
                # One read live since the cached list was made is newer than it.
                if self._by_crd[name][0] <= listed.resource_version:
                    self._uninstall(name)
            self._fetched = time.monotonic()

    async def _read(self, name: str) -> None:
        try:
            stored = await self._storage.get(CRDS.key("", name), GetOptions(resource_version=""))
        except KeyNotFound:
            return
        self._install(orjson.loads(stored.value), stored.resource_version)

    def _install(self, crd: dict[str, Any], resource_version: int) -> str:
        """Serve a CRD's resources as it now is; its name."""
        name = str(crd["metadata"]["name"])
        known = self._by_crd.get(name)
        if known is not None and known[0] >= resource_version:
            return name
        self._uninstall(name)
        stores: list[Store] = []
        if custom.served(crd):
            try:
                stores = [
                    Store(r, self._storage, namespaces=self._namespaces)
                    for r in custom.resources_of(crd)
                ]
            except (KeyError, ValueError, TypeError) as e:
                log.warning("cannot serve a CustomResourceDefinition", crd=name, error=str(e))
        self._by_crd[name] = (resource_version, stores)
        for store in stores:
            self._custom[_key(store)] = store
        return name

    def _uninstall(self, name: str) -> None:
        _, stores = self._by_crd.pop(name, (0, []))
        for store in stores:
            if self._custom.get(_key(store)) is store:
                del self._custom[_key(store)]


def _key(store: Store) -> Key:
    r = store.resource
    return (r.group, r.version, r.name)
