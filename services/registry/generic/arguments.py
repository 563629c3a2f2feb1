"""What a request's own arguments must be before storage is asked: a namespace
for a namespaced resource, a subresource the resource has, and a body naming
the object the URL names (400 or 404, as kube's handlers answer)."""

from __future__ import annotations

from typing import Any

from services.registry.generic.declarations import Resource
from strata.api import errors


def check_namespace(resource: Resource, namespace: str) -> None:
    if resource.namespaced and not namespace:
        raise errors.bad_request("a namespace must be given for namespaced resources")


def check_subresource(resource: Resource, subresource: str) -> None:
    if subresource and subresource not in resource.subresources:
        raise errors.path_not_found()


def check_names(resource: Resource, metadata: dict[str, Any], namespace: str, name: str) -> None:
    """A PUT body's name must be the URL's, and its namespace, when given (400);
    kube's checkName: a body without a name is refused too."""
    if not metadata.get("name"):
        raise errors.bad_request(
            f"the name of the object ({name} based on URL) was undeterminable: "
            "name must be provided"
        )
    if metadata["name"] != name:
        raise errors.bad_request(
            f"the name of the object ({metadata['name']}) does not match the name on the "
            f"URL ({name})"
        )
    if resource.namespaced and metadata.get("namespace", namespace) != namespace:
        raise errors.bad_request(
            "the namespace of the provided object does not match the namespace sent on the request"
        )
