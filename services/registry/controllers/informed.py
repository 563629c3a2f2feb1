"""How the registry's controllers read the API objects they go through: from a
strata.client informer over the Registry API (the registry's own), as any
controller outside strata would, rather than listing them every round."""

from __future__ import annotations

import asyncio
import contextlib
import copy
from typing import Any

import grpc

from services.registry.generic.declarations import Resource as Served
from strata.client import EventHandler, RegistryResourceClient, Resource, SharedIndexInformer

Obj = dict[str, Any]


def client_resource(served: Served) -> Resource:
    """strata.client's name for a resource the registry serves."""
    return Resource(
        group=served.group,
        version=served.version,
        resource=served.name,
        namespaced=served.namespaced,
        kind=served.kind,
    )


def informer_for(
    registry: grpc.aio.Channel, served: Served, *, owned_or_deleting: bool = False
) -> SharedIndexInformer:
    """An informer on served's objects (only those with ownerReferences or a
    deletionTimestamp when owned_or_deleting: see RegistryResourceClient)."""
    client = RegistryResourceClient(
        registry, client_resource(served), owned_or_deleting=owned_or_deleting
    )
    return SharedIndexInformer(client)


class Informed:
    """One resource's objects as an informer keeps them; changed is set by every
    add, update and delete the informer hears of."""

    def __init__(self, registry: grpc.aio.Channel, served: Served) -> None:
        self.informer = informer_for(registry, served)
        self.changed = asyncio.Event()
        self.informer.add_event_handler(
            EventHandler(
                on_add=lambda *_: self.changed.set(),
                on_update=lambda *_: self.changed.set(),
                on_delete=lambda *_: self.changed.set(),
            )
        )

    async def objects(self) -> list[Obj]:
        """Every object, once the informer has synced (started on first ask);
        copies, for the caller to change as it writes them back."""
        self.informer.start()
        await self.informer.wait_for_cache_sync()
        return [copy.deepcopy(obj) for obj in self.informer.indexer.list()]

    async def stop(self) -> None:
        with contextlib.suppress(asyncio.CancelledError):
            await self.informer.stop()
