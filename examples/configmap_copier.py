"""A controller written with strata.client: keeps a copy of one ConfigMap in
every namespace labelled `strata.dev/copy=true`, and puts a copy back when it
is changed or deleted. Run it against strata or any Kubernetes API server:

    python examples/configmap_copier.py <namespace>/<configmap>
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from strata import client as k

NAMESPACES = k.Resource(version="v1", resource="namespaces", namespaced=False)
CONFIGMAPS = k.Resource(version="v1", resource="configmaps")
SELECTOR = "strata.dev/copy=true"
MANAGER = "configmap-copier"


async def run(rest: k.RestClient, source: str) -> None:
    """Reconcile until cancelled; source is "<namespace>/<name>"."""
    source_ns, name = source.split("/")
    dynamic = k.DynamicClient(rest)
    factory = k.SharedInformerFactory(dynamic)
    namespaces = factory.informer_for(NAMESPACES).lister()
    configmaps = factory.informer_for(CONFIGMAPS).lister()
    queue = k.RateLimitingQueue()

    def changed(obj: Any, *_: Any) -> None:
        meta = getattr(obj, "obj", obj)["metadata"]  # a DeletedFinalStateUnknown's too
        if meta.get("name") == name and meta.get("namespace") == source_ns:
            for ns in namespaces.list(SELECTOR):  # the source: every copy
                queue.add(ns["metadata"]["name"])
        elif meta.get("name") == name:  # a copy
            queue.add(meta["namespace"])
        elif "namespace" not in meta:  # a namespace
            queue.add(meta["name"])

    handler = k.EventHandler(
        on_add=changed, on_update=lambda _, new: changed(new), on_delete=changed
    )
    factory.informer_for(NAMESPACES).add_event_handler(handler)
    factory.informer_for(CONFIGMAPS).add_event_handler(handler)
    factory.start()
    await factory.wait_for_cache_sync()

    async def reconcile(target: str) -> None:
        """Apply the source's data to target's copy, if target wants one."""
        wanted = any(n["metadata"]["name"] == target for n in namespaces.list(SELECTOR))
        try:
            data = configmaps.namespaced(source_ns).get(name).get("data") or {}
        except k.NotFound:
            return  # no source (yet): nothing to copy
        if wanted and target != source_ns:
            copy = {"apiVersion": "v1", "kind": "ConfigMap", "data": data}
            copy["metadata"] = {"name": name, "namespace": target}
            await dynamic.resource(CONFIGMAPS).apply(copy, field_manager=MANAGER, force=True)

    try:
        while True:
            try:
                target = str(await queue.get())
            except k.ShutDown:
                return
            try:
                await reconcile(target)
                queue.forget(target)
            except k.ApiError:
                queue.add_rate_limited(target)  # again later, waiting longer each time
            finally:
                queue.done(target)
    finally:
        queue.shutdown()
        await factory.shutdown()


async def main() -> None:
    async with k.RestClient(k.load_config()) as rest:
        await run(rest, sys.argv[1])


if __name__ == "__main__":
    asyncio.run(main())
