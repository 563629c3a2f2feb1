"""One resource request as the router hands it to its verb's handler, and what
every handler asks of the gateway: the registry, the open watches, admission."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from aiohttp import web

from services.gateway import paths, user
from services.gateway.admission import Admission, Attributes, Operation
from services.gateway.catalog import APIResource
from services.gateway.watches import RegistryWatches
from strata.proto.registry.v1 import registry_pb2
from strata.registry_client import RegistryClient


@dataclass
class Backend:
    registry: RegistryClient
    watches: RegistryWatches
    # The admission plugins the app enabled (none today).
    admission: Admission
    # Set on shutdown: a watch that ends then ends for the server, not its client.
    closing: bool = False


@dataclass(frozen=True, slots=True)
class Call:
    request: web.Request
    info: paths.RequestInfo
    # The resource info names, as the catalog serves it.
    api: APIResource
    ref: registry_pb2.ResourceRef
    backend: Backend

    @property
    def registry(self) -> RegistryClient:
        return self.backend.registry

    async def admitted(self, operation: Operation, obj: bytes, dry_run: bool) -> bytes:
        """obj (JSON; empty for a delete) as the admission plugins let it be written."""
        admission = self.backend.admission
        if not admission.enabled:
            return obj
        info = self.info
        attributes = Attributes(
            operation=operation,
            user=user.of(self.request),
            group=info.group,
            version=info.version,
            resource=info.resource,
            subresource=info.subresource,
            namespace=info.namespace,
            name=info.name,
            dry_run=dry_run,
        )
        return await admission.review(attributes, obj)


# A verb's handler.
Handler = Callable[[Call], Awaitable[web.StreamResponse]]
