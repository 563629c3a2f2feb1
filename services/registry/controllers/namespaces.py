"""Namespace lifecycle (kube's namespace controller): a namespace being deleted
is Terminating until everything in it is gone; then its `kubernetes` finalizer
is removed and the namespace goes with it.

A strata.client informer on namespaces, over the Registry API as any other
client's, queues each namespace that turns up Terminating with the finalizer;
a worker empties it (every namespaced resource, each object deleted as a
client's delete would be, so an object with finalizers holds its namespace
until they are removed) and finalizes it once found empty, looking again a
moment later while something still holds it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

import grpc

from services.registry.generic.namespace_lifecycle import TERMINATING
from services.registry.generic.store import Store
from strata import telemetry
from strata.api.errors import StatusError
from strata.client import (
    EventHandler,
    RateLimitingQueue,
    RegistryResourceClient,
    Resource,
    SharedIndexInformer,
    ShutDown,
)
from strata.storage import StorageError

FINALIZER = "kubernetes"
# How soon a namespace still held by objects with finalizers is looked at again.
RECHECK_SECONDS = 0.5
NAMESPACES = Resource(version="v1", resource="namespaces", namespaced=False, kind="Namespace")

log = telemetry.get_logger("strata.registry.namespaces")


def _terminating(obj: Any) -> bool:
    obj = getattr(obj, "obj", obj)
    finalizers = (obj.get("spec") or {}).get("finalizers") or []
    return bool(obj.get("status", {}).get("phase") == TERMINATING and FINALIZER in finalizers)


class NamespaceLifecycle:
    def __init__(
        self,
        registry: grpc.aio.Channel,
        namespaces: Store,
        stores: Callable[[], Awaitable[list[Store]]],
        recheck: float = RECHECK_SECONDS,
    ) -> None:
        self._informer = SharedIndexInformer(RegistryResourceClient(registry, NAMESPACES))
        self._namespaces = namespaces
        # Every kind of object stored, custom resources included, as it is now.
        self._stores = stores
        self._recheck = recheck
        self._queue = RateLimitingQueue()

        def changed(obj: Any, *_: Any) -> None:
            if _terminating(obj):
                self._queue.add(obj["metadata"]["name"])

        self._informer.add_event_handler(
            EventHandler(on_add=changed, on_update=lambda _, new: changed(new))
        )

    async def run(self) -> None:
        self._informer.start()
        try:
            while True:
                try:
                    name = str(await self._queue.get())
                except ShutDown:
                    return
                try:
                    if not await self._finish(name):
                        self._queue.add_after(name, self._recheck)
                    self._queue.forget(name)
                except (StatusError, StorageError) as e:
                    log.warning("namespace not finalized", namespace=name, error=e.message)
                    self._queue.add_rate_limited(name)
                except Exception:
                    log.exception("namespace not finalized", namespace=name)
                    self._queue.add_rate_limited(name)
                finally:
                    self._queue.done(name)
        finally:
            self._queue.shutdown()
            with contextlib.suppress(asyncio.CancelledError):
                await self._informer.stop()

    async def _finish(self, namespace: str) -> bool:
        """Empty a Terminating namespace and finalize it; False while objects
        with finalizers still hold it."""
        current = self._informer.indexer.get_by_key(namespace)
        if current is None or not _terminating(current):
            return True  # gone, or no longer ours to finish
        emptied = [await s.empty(namespace) for s in await self._stores() if s.resource.namespaced]
        if not all(emptied):
            return False
        await self._namespaces.remove_finalizer("", namespace, FINALIZER, spec=True)
        log.info("namespace emptied and finalized", namespace=namespace)
        return True
