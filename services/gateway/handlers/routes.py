"""The one entry point for every /api and /apis path below a group version:
the path parsed into a RequestInfo, the resource looked up in the catalog, and
the request handed to its verb's handler by the table below."""

from __future__ import annotations

from collections.abc import Mapping

import grpc
from aiohttp import web

from services.gateway import paths
from services.gateway.admission import Admission
from services.gateway.catalog import Catalog
from services.gateway.handlers import deletes, patching, reads, watch, writes
from services.gateway.handlers.call import Answerer, Backend, Call, Handler
from services.gateway.handlers.discovery import Discovery
from services.gateway.watches import RegistryWatches
from strata.api import errors
from strata.api.wire import status_from_rpc_error
from strata.proto.registry.v1 import registry_pb2
from strata.registry_client import RegistryClient

# Each verb (services/gateway/paths.py decides a request's) to its handler.
ROUTES: Mapping[str, Handler] = {
    "get": reads.get_object,
    "list": reads.list_objects,
    "watch": watch.watch_objects,
    "create": writes.create,
    "update": writes.update,
    "patch": patching.patch,
    "delete": deletes.delete,
    "deletecollection": deletes.delete_collection,
}


class ResourceHandlers:
    def __init__(
        self,
        registry: RegistryClient,
        catalog: Catalog,
        discovery: Discovery,
        admission: Admission,
        answerer: Answerer,
    ) -> None:
        self._catalog = catalog
        self._discovery = discovery
        self._backend = Backend(registry, RegistryWatches(registry.stub), admission, answerer)

    async def close_watches(self) -> None:
        """End every open watch (on shutdown); clients reconnect and resume."""
        self._backend.closing = True
        self._backend.watches.close()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        info = paths.info_of(request)
        if info is None:
            return await self._discovery.nothing_at(request)
        try:
            if not info.resource:
                return await self._discovery.group_or_version(request, info)
            api = await self._catalog.lookup(info.group, info.version, info.resource)
            if api is None:
                return await self._discovery.nothing_at(request)
            if info.namespace and not api.namespaced:
                raise errors.path_not_found()
            if info.subresource and info.subresource not in api.subresources:
                raise errors.path_not_found()
            verb = paths.verb(request, info)
            if not verb or verb not in api.verbs:
                raise errors.method_not_allowed()
            ref = registry_pb2.ResourceRef(
                group=info.group,
                version=info.version,
                resource=info.resource,
                namespace=info.namespace,
            )
            return await ROUTES[verb](Call(request, info, api, ref, self._backend))
        except grpc.aio.AioRpcError as e:
            # The catalog's own RPCs (resource lookups, discovery); a pipelined
            # registry call already raises the StatusError it failed with.
            raise status_from_rpc_error(e) from None
