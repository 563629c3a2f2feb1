"""kube's NamespaceLifecycle admission, as far as the Store does it: a create
into a namespace that does not exist is 404, into one being deleted 403.

Which resource namespaces are and where they are cached is given to the Store
(`Namespaces`, services/registry/known_namespaces.py): the generic machinery
knows no resource. Which namespaces may never be deleted is the Namespace
strategy's to say (a `DeletionGuard`).
"""

from __future__ import annotations

from typing import Any, Protocol

import orjson

from services.registry.generic.declarations import Resource
from services.registry.generic.storage_errors import interpreted
from strata.api import errors
from strata.api.errors import Cause
from strata.proto.storage.v1 import storage_pb2
from strata.storage import GetOptions, KeyNotFound, Storage

Obj = dict[str, Any]
TERMINATING = "Terminating"


class Namespaces(Protocol):
    """Where a create's namespace check looks (kube's namespace lister): the
    Namespace resource, read from storage when the cache cannot say, and the
    cache, read first."""

    @property
    def resource(self) -> Resource: ...

    def cached(self, name: str) -> Obj | None:
        """The namespace as cached (not to be changed), or None when storage must say."""
        ...

    def deleting(self, name: str) -> None:
        """name is being deleted: read it from storage for a while."""
        ...


async def require_namespace(
    storage: Storage, namespaces: Namespaces, resource: Resource, namespace: str, name: str
) -> None:
    """404 when namespace does not exist, 403 when it is being deleted, for a
    create of resource's object name in it."""
    # As kube's NamespaceLifecycle: the informer's namespaces, then the cache,
    # and a live read before refusing, since a namespace created a moment ago
    # may not have reached either yet.
    found = namespaces.cached(namespace)
    if found is None:
        found = orjson.loads(
            (await _stored(storage, namespaces.resource, resource, namespace)).value
        )
    if (found.get("status") or {}).get("phase") == TERMINATING:
        raise errors.forbidden(
            resource.name,
            name,
            f"unable to create new content in namespace {namespace} because it is being terminated",
            resource.group,
            (
                Cause(
                    reason="NamespaceTerminating",
                    message=f"namespace {namespace} is being terminated",
                    field="metadata.namespace",
                ),
            ),
        )


async def _stored(
    storage: Storage, namespaces: Resource, resource: Resource, namespace: str
) -> storage_pb2.Object:
    """The stored namespace (a cached read, then a live one before 404); other
    storage errors are the request's, for resource."""
    key = namespaces.key("", namespace)
    with interpreted(resource, namespace):
        try:
            return await storage.get(key, GetOptions(resource_version="0"))
        except KeyNotFound:
            try:
                return await storage.get(key, GetOptions(resource_version=""))
            except KeyNotFound:
                raise errors.not_found(namespaces.name, namespace) from None
