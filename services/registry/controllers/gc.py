"""Garbage collection by ownerReferences (kube's garbage collector), one round
every interval over the objects that matter to it, as a strata.client informer
per resource (over the Registry API, the registry's own) has them: only objects
with ownerReferences or a deletionTimestamp, so the events of every other
object never travel to it (an owner is read live when needed). A resource whose
informer has not synced yet waits for a later round:

- A dependent whose owners are all gone is deleted (background cascading: its
  owner went first, it follows); one with some owners gone loses the dangling
  references. An owner is only taken to be gone once a live read agrees, so an
  owner created a moment ago and not yet cached is never mistaken for absent.
- An owner deleted with propagationPolicy=Orphan (the `orphan` finalizer) has
  its dependents' references to it removed, then the finalizer.
- An owner deleted with propagationPolicy=Foreground (the `foregroundDeletion`
  finalizer) has its dependents deleted; once none that blocks it
  (blockOwnerDeletion) is left, the finalizer is removed and the owner goes.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import grpc
import orjson

from services.registry.controllers import rounds
from services.registry.controllers.informed import informer_for
from services.registry.generic.deletion import FOREGROUND_FINALIZER, ORPHAN_FINALIZER
from services.registry.generic.options import Rendering
from services.registry.generic.store import Store
from services.registry.served import ServedStores
from strata import telemetry
from strata.api.errors import StatusError
from strata.client import SharedIndexInformer

INTERVAL_SECONDS = 1.0

Obj = dict[str, Any]
log = telemetry.get_logger("strata.registry.gc")


@dataclass(frozen=True)
class Node:
    """One object as this round saw it, and the Store it lives in."""

    store: Store
    obj: Obj

    @property
    def namespace(self) -> str:
        return str(self.obj["metadata"].get("namespace", ""))

    @property
    def name(self) -> str:
        return str(self.obj["metadata"]["name"])

    @property
    def uid(self) -> str:
        return str(self.obj["metadata"].get("uid", ""))

    def references(self) -> list[Obj]:
        return list(self.obj["metadata"].get("ownerReferences") or [])

    def finalizers(self) -> list[str]:
        return list(self.obj["metadata"].get("finalizers") or [])

    @property
    def deleting(self) -> bool:
        return bool(self.obj["metadata"].get("deletionTimestamp"))


class GarbageCollector:
    def __init__(
        self, registry: grpc.aio.Channel, served: ServedStores, interval: float = INTERVAL_SECONDS
    ) -> None:
        self._registry = registry
        self._served = served
        self._by_kind: dict[tuple[str, str], Store] = {}
        self._informers: dict[tuple[str, str, str], SharedIndexInformer] = {}
        self._interval = interval

    async def run(self) -> None:
        try:
            await rounds.every(self._interval, "garbage collection", self.collect_once)
        finally:
            await self._stop(set(self._informers))

    async def _stop(self, keys: set[tuple[str, str, str]]) -> None:
        for key in keys:
            with contextlib.suppress(asyncio.CancelledError):
                await self._informers.pop(key).stop()

    def _objects(self, store: Store) -> list[Obj] | None:
        """store's objects as its informer has them (started on first ask);
        None until it has synced."""
        r = store.resource
        key = (r.group, r.version, r.name)
        informer = self._informers.get(key)
        if informer is None:
            informer = informer_for(self._registry, r, owned_or_deleting=True)
            self._informers[key] = informer
            informer.start()
        return informer.indexer.list() if informer.has_synced() else None

    async def collect_once(self) -> None:
        nodes: list[Node] = []
        # Owners by any version served; objects once each, at the version stored.
        every = await self._served.every()
        self._by_kind = {(s.resource.api_version, s.resource.kind): s for s in every}
        distinct = await self._served.distinct()
        served = {(s.resource.group, s.resource.version, s.resource.name) for s in distinct}
        await self._stop(set(self._informers) - served)  # a custom resource went away
        for store in distinct:
            nodes += (Node(store, obj) for obj in self._objects(store) or ())
        dependents: dict[str, list[Node]] = {}
        for node in nodes:
            for reference in node.references():
                dependents.setdefault(str(reference.get("uid", "")), []).append(node)
        for node in nodes:
            try:
                if node.deleting and ORPHAN_FINALIZER in node.finalizers():
                    await self._orphan(node, dependents.get(node.uid, []))
                elif node.deleting and FOREGROUND_FINALIZER in node.finalizers():
                    await self._delete_dependents(node, dependents.get(node.uid, []))
                elif node.references() and not node.deleting:
                    await self._collect_if_orphaned(node)
            except StatusError as e:
                # One object's trouble must not hold up the others; the next
                # round looks at it again (NotFound and Conflict: it changed).
                if e.reason not in ("NotFound", "Conflict"):
                    log.warning("cannot collect", object=_describe(node), error=e.message)

    async def _orphan(self, owner: Node, dependents: list[Node]) -> None:
        for dependent in dependents:
            await _rewrite(dependent, lambda obj: _drop_references(obj, {owner.uid}))
        await _rewrite(owner, lambda obj: _drop_finalizer(obj, ORPHAN_FINALIZER))
        log.info("orphaned dependents", owner=_describe(owner), dependents=len(dependents))

    async def _delete_dependents(self, owner: Node, dependents: list[Node]) -> None:
        blocking = 0
        for dependent in dependents:
            if not dependent.deleting:
                await dependent.store.delete(dependent.namespace, dependent.name, None)
            reference = next(r for r in dependent.references() if r.get("uid") == owner.uid)
            blocking += bool(reference.get("blockOwnerDeletion"))
        if blocking:
            return  # the next round looks again once they are gone
        await _rewrite(owner, lambda obj: _drop_finalizer(obj, FOREGROUND_FINALIZER))
        log.info("deleted dependents in the foreground", owner=_describe(owner))

    async def _collect_if_orphaned(self, cached: Node) -> None:
        # As kube's collector does, act on the dependent as it is now, not as the
        # informer last heard of it: an orphaning may have just dropped its
        # references, with the owner already gone.
        now = orjson.loads(await cached.store.get(cached.namespace, cached.name, "", Rendering()))
        if now["metadata"].get("uid") != cached.uid or now["metadata"].get("deletionTimestamp"):
            return
        dependent = Node(cached.store, now)
        if not dependent.references():
            return
        gone = {
            str(reference.get("uid", ""))
            for reference in dependent.references()
            if await self._owner_gone(dependent, reference)
        }
        if not gone:
            return
        if len(gone) == len(dependent.references()):
            await dependent.store.delete(dependent.namespace, dependent.name, None)
            log.info("deleted a dependent whose owners are gone", dependent=_describe(dependent))
        else:
            await _rewrite(dependent, lambda obj: _drop_references(obj, gone))

    async def _owner_gone(self, dependent: Node, reference: Obj) -> bool:
        """Whether a live read finds no owner of this reference's uid (an owner of
        a kind strata does not serve is left alone, as kube's collector does)."""
        kind = (str(reference.get("apiVersion", "")), str(reference.get("kind", "")))
        store = self._by_kind.get(kind)
        if store is None:
            return False
        if store.resource.namespaced and not dependent.namespace:
            return True  # a cluster-scoped object cannot have a namespaced owner (as kube)
        namespace = dependent.namespace if store.resource.namespaced else ""
        try:
            found = await store.get(namespace, str(reference.get("name", "")), "", Rendering())
        except StatusError as e:
            if e.reason == "NotFound":
                return True
            raise
        return bool(orjson.loads(found)["metadata"].get("uid") != reference.get("uid"))


async def _rewrite(node: Node, change: Callable[[Obj], None]) -> None:
    """Update node's object with change, re-reading it on Conflict."""
    obj = copy.deepcopy(node.obj)
    for _ in range(5):
        change(obj)
        try:
            await node.store.update(node.namespace, node.name, orjson.dumps(obj))
            return
        except StatusError as e:
            if e.reason != "Conflict":
                raise
        obj = orjson.loads(await node.store.get(node.namespace, node.name, "", Rendering()))


def _drop_references(obj: Obj, uids: set[str]) -> None:
    metadata = obj["metadata"]
    kept = [r for r in metadata.get("ownerReferences") or [] if r.get("uid") not in uids]
    if kept:
        metadata["ownerReferences"] = kept
    else:
        metadata.pop("ownerReferences", None)


def _drop_finalizer(obj: Obj, finalizer: str) -> None:
    metadata = obj["metadata"]
    metadata["finalizers"] = [f for f in metadata.get("finalizers") or [] if f != finalizer]


def _describe(node: Node) -> str:
    where = f"{node.namespace}/" if node.namespace else ""
    return f"{node.store.resource.name}/{where}{node.name}"
