"""The ServiceAccounts and Secrets a service-account token is checked against
on every request (kube-apiserver's ServiceAccountTokenGetter): kept by
strata.client informers over the Registry API, so that a request reads memory,
not storage. As kube's getter, an object the informer does not show (yet) is
read from the registry before a token naming it is refused: an account made a
moment ago works at once, and only a token naming an object that is gone
costs a read.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any, Protocol

import grpc

from strata import telemetry
from strata.client import NotFound, RegistryResourceClient, Resource, SharedIndexInformer

Obj = dict[str, Any]
SERVICE_ACCOUNTS = Resource(version="v1", resource="serviceaccounts", kind="ServiceAccount")
SECRETS = Resource(version="v1", resource="secrets", kind="Secret")

log = telemetry.get_logger("strata.gateway.accounts")


class AccountLookup(Protocol):
    """Where a service-account token's objects are looked up (None: not there)."""

    async def service_account(self, namespace: str, name: str) -> Obj | None: ...

    async def secret(self, namespace: str, name: str) -> Obj | None: ...


class Accounts:
    def __init__(self, registry: grpc.aio.Channel) -> None:
        self._clients = {
            r.resource: RegistryResourceClient(registry, r) for r in (SERVICE_ACCOUNTS, SECRETS)
        }
        self._informers = {
            name: SharedIndexInformer(client) for name, client in self._clients.items()
        }

    def start(self) -> None:
        for informer in self._informers.values():
            informer.start()

    async def stop(self) -> None:
        for informer in self._informers.values():
            with contextlib.suppress(asyncio.CancelledError):
                await informer.stop()

    def synced(self) -> bool:
        return all(i.has_synced() for i in self._informers.values())

    async def _get(self, resource: str, namespace: str, name: str) -> Obj | None:
        informer = self._informers[resource]
        if informer.has_synced():
            cached = informer.indexer.get_by_key(f"{namespace}/{name}")
            if cached is not None:
                return cached
        if not namespace or not name:
            return None
        try:
            return await self._clients[resource].get(name, namespace)
        except NotFound:
            return None

    async def service_account(self, namespace: str, name: str) -> Obj | None:
        return await self._get(SERVICE_ACCOUNTS.resource, namespace, name)

    async def secret(self, namespace: str, name: str) -> Obj | None:
        return await self._get(SECRETS.resource, namespace, name)
