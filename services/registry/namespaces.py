"""Namespace lifecycle (kube's namespace controller): a namespace being deleted
is Terminating until everything in it is gone; then its `kubernetes` finalizer
is removed and the namespace goes with it.

Each round lists namespaces from the cache, empties the Terminating ones (every
namespaced resource, each object deleted as a client's delete would be, so an
object with finalizers holds its namespace until they are removed), and
finalizes those found empty.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import orjson

from services.registry import rounds
from services.registry.store import TERMINATING, Store
from strata import telemetry

FINALIZER = "kubernetes"
INTERVAL_SECONDS = 0.5

log = telemetry.get_logger("strata.registry.namespaces")


class NamespaceLifecycle:
    def __init__(
        self,
        namespaces: Store,
        stores: Callable[[], Awaitable[list[Store]]],
        interval: float = INTERVAL_SECONDS,
    ) -> None:
        self._namespaces = namespaces
        # Every kind of object stored, custom resources included, as it is now.
        self._stores = stores
        self._interval = interval

    async def run(self) -> None:
        await rounds.every(self._interval, "namespace lifecycle", self.round_once)

    async def round_once(self) -> None:
        for name in await self._terminating():
            await self._finish(name)

    async def _terminating(self) -> list[str]:
        names = []
        for item in await self._namespaces.cached():
            obj = orjson.loads(item)
            spec_finalizers = (obj.get("spec") or {}).get("finalizers") or []
            if obj.get("status", {}).get("phase") == TERMINATING and FINALIZER in spec_finalizers:
                names.append(obj["metadata"]["name"])
        return names

    async def _finish(self, namespace: str) -> None:
        emptied = [await s.empty(namespace) for s in await self._stores() if s.resource.namespaced]
        if not all(emptied):
            return  # objects with finalizers still hold it: the next round looks again
        await self._namespaces.remove_finalizer("", namespace, FINALIZER, spec=True)
        log.info("namespace emptied and finalized", namespace=namespace)
