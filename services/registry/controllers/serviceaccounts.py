"""The `default` ServiceAccount of every namespace (kube-controller-manager's
serviceaccount controller): clients, kubectl's and the Pods they make, take it
for granted and wait for it. It is created in each namespace that is not
Terminating, those there at start included, and again whenever it is deleted.

Two strata.client informers over the Registry API (the registry's own) tell
the controller what changed: namespaces, and the ServiceAccounts named
`default` only, so other accounts' events never reach it. A round creates what
is missing, as kube's controller does, with nothing but a name: kube's
controller writes no secrets and no automountServiceAccountToken.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import grpc
import orjson

from services.registry.builtin.resources import NAMESPACES, SERVICE_ACCOUNTS
from services.registry.controllers import rounds
from services.registry.controllers.informed import client_resource, informer_for
from services.registry.generic.namespace_lifecycle import TERMINATING
from services.registry.generic.store import Store
from strata import telemetry
from strata.api.errors import StatusError
from strata.client import EventHandler, RegistryResourceClient, SharedIndexInformer

DEFAULT = "default"
# When a round could not create every account, how soon the next tries again.
RETRY_SECONDS = 0.5

Obj = dict[str, Any]
log = telemetry.get_logger("strata.registry.serviceaccounts")


def default_account(namespace: str) -> Obj:
    """The ServiceAccount kube's controller creates (its whole body)."""
    metadata = {"name": DEFAULT, "namespace": namespace}
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": metadata}


def _terminating(namespace: Obj) -> bool:
    return bool((namespace.get("status") or {}).get("phase") == TERMINATING)


def _skipped(error: StatusError) -> bool:
    """Whether a create's refusal leaves nothing to do: the account is there,
    or its namespace went or began terminating meanwhile."""
    if error.reason in ("AlreadyExists", "NotFound"):
        return True
    causes = error.details.get("causes") or []
    return any(c.get("reason") == "NamespaceTerminating" for c in causes)


class DefaultServiceAccounts:
    def __init__(self, registry: grpc.aio.Channel, accounts: Store) -> None:
        self._accounts = accounts
        self._namespaces = informer_for(registry, NAMESPACES)
        self._defaults = SharedIndexInformer(
            RegistryResourceClient(registry, client_resource(SERVICE_ACCOUNTS)),
            field_selector=f"metadata.name={DEFAULT}",
        )
        self.changed = asyncio.Event()
        touched = EventHandler(
            on_add=lambda *_: self.changed.set(),
            on_update=lambda *_: self.changed.set(),
        )
        self._namespaces.add_event_handler(touched)
        self._defaults.add_event_handler(EventHandler(on_delete=lambda *_: self.changed.set()))

    async def run(self) -> None:
        self._namespaces.start()
        self._defaults.start()
        try:
            await rounds.on_change(
                self.changed, "default serviceaccounts", self.round_once, retry=RETRY_SECONDS
            )
        finally:
            for informer in (self._namespaces, self._defaults):
                with contextlib.suppress(asyncio.CancelledError):
                    await informer.stop()

    async def round_once(self) -> bool:
        """Create every missing `default`; whether none was left missing (one
        the informer has not shown yet is refused AlreadyExists, and passes)."""
        await self._namespaces.wait_for_cache_sync()
        await self._defaults.wait_for_cache_sync()
        settled = True
        for namespace in self._namespaces.indexer.list():
            name = str(namespace["metadata"]["name"])
            if _terminating(namespace):
                continue  # as kube's: a namespace being emptied gets none
            if self._defaults.indexer.get_by_key(f"{name}/{DEFAULT}") is not None:
                continue
            try:
                await self._accounts.create(name, orjson.dumps(default_account(name)))
            except StatusError as e:
                if not _skipped(e):
                    log.warning("cannot create serviceaccount", namespace=name, error=e.message)
                    settled = False
                continue
            log.info("created default serviceaccount", namespace=name)
        return settled
