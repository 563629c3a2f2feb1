"""The namespaces a create's namespace check reads before it asks storage.

kube's NamespaceLifecycle admission reads a namespace lister first; so does
the registry: an informer on namespaces over the Registry API (the registry's
own, started once it serves). Storage is read instead while the informer has
not synced, for a namespace it does not hold (one created a moment ago may not
have reached it), and for a namespace deleted through this registry in the
last FORCE_LIVE_LOOKUP_SECONDS, whose cached state may still say Active after
it turned Terminating (kube's force-live-lookup cache). A create then costs no
read of the namespace from the cacher.
"""

from __future__ import annotations

import time
from typing import Any

import grpc

from services.registry.builtin.resources import NAMESPACES
from services.registry.controllers.informed import informer_for
from strata.client import SharedIndexInformer

# kube's forceLiveLookupTTL.
FORCE_LIVE_LOOKUP_SECONDS = 30.0

Obj = dict[str, Any]


class KnownNamespaces:
    """The Stores' `Namespaces` (services/registry/generic/namespace_lifecycle.py)."""

    def __init__(self, force_live_lookup_seconds: float = FORCE_LIVE_LOOKUP_SECONDS) -> None:
        # What namespaces are, for the Stores' checks to read them from storage.
        self.resource = NAMESPACES
        self._informer: SharedIndexInformer | None = None
        self._force_live_seconds = force_live_lookup_seconds
        # Namespaces deleted here lately: until when their cached state is not trusted.
        self._deleted: dict[str, float] = {}

    def follow(self, registry: grpc.aio.Channel) -> SharedIndexInformer:
        """The informer to read from (for the caller to start once the registry
        serves, and to stop)."""
        self._informer = informer_for(registry, self.resource)
        return self._informer

    def cached(self, name: str) -> Obj | None:
        """The namespace as the informer holds it (not to be changed), or None
        when storage must say."""
        informer = self._informer
        if informer is None or not informer.has_synced():
            return None
        until = self._deleted.get(name)
        if until is not None:
            if time.monotonic() < until:
                return None
            del self._deleted[name]
        return informer.indexer.get_by_key(name)

    def deleting(self, name: str) -> None:
        """name is being deleted: read it from storage for a while."""
        now = time.monotonic()
        for expired in [n for n, until in self._deleted.items() if until <= now]:
            del self._deleted[expired]
        self._deleted[name] = now + self._force_live_seconds
