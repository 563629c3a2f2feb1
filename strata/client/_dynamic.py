"""A client for any resource by group, version and plural name, on plain
dicts, as client-go's dynamic client is: get, list (one page, or every item
as an async iterator that follows continue tokens), watch (events as an async
iterator), create, update, patch with each patch type, server-side apply,
delete and delete_collection, and the same on subresources."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Literal

import orjson

from strata.client._errors import api_error
from strata.client._rest import Body, Params, RestClient

Obj = dict[str, Any]
PatchType = Literal["json", "merge", "strategic", "apply"]
PATCH_CONTENT_TYPES: dict[str, str] = {
    "json": "application/json-patch+json",
    "merge": "application/merge-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "apply": "application/apply-patch+yaml",
}


@dataclass(frozen=True, kw_only=True)
class Resource:
    """One resource of the API: where it lives and whether it is namespaced."""

    group: str = ""
    version: str
    resource: str
    namespaced: bool = True
    kind: str = ""

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(self, namespace: str | None = None, name: str = "", subresource: str = "") -> str:
        """The URL path of the collection, or of one object (and subresource)."""
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{namespace}"
        base += f"/{self.resource}"
        if name:
            base += f"/{name}"
            if subresource:
                base += f"/{subresource}"
        return base


@dataclass(frozen=True)
class WatchEvent:
    """One event of a watch: ADDED, MODIFIED, DELETED, BOOKMARK or ERROR."""

    type: str
    object: Obj


def _options(**given: Any) -> dict[str, str | int | bool | None]:
    """Query parameters by their API names (camelCase), without the unset ones."""
    names = {
        "label_selector": "labelSelector",
        "field_selector": "fieldSelector",
        "resource_version": "resourceVersion",
        "resource_version_match": "resourceVersionMatch",
        "timeout_seconds": "timeoutSeconds",
        "allow_watch_bookmarks": "allowWatchBookmarks",
        "send_initial_events": "sendInitialEvents",
        "field_manager": "fieldManager",
        "field_validation": "fieldValidation",
        "dry_run": "dryRun",
        "propagation_policy": "propagationPolicy",
        "grace_period_seconds": "gracePeriodSeconds",
        "continue_": "continue",
    }
    out: dict[str, str | int | bool | None] = {}
    for key, value in given.items():
        if value is None or value == "":
            continue
        if key == "dry_run":
            value = "All" if value is True else value
            if value is False:
                continue
        out[names.get(key, key)] = value
    return out


class ResourceClient:
    """Requests on one resource (see the module docstring)."""

    def __init__(self, rest: RestClient, resource: Resource) -> None:
        self.rest = rest
        self.resource = resource

    def _ns(self, namespace: str | None) -> str | None:
        if not self.resource.namespaced:
            return None
        return namespace if namespace is not None else self.rest.config.namespace

    async def get(
        self,
        name: str,
        namespace: str | None = None,
        *,
        subresource: str = "",
        resource_version: str = "",
    ) -> Obj:
        path = self.resource.path(self._ns(namespace), name, subresource)
        result: Obj = await self.rest.request(
            "GET", path, params=_options(resource_version=resource_version)
        )
        return result

    async def list(
        self,
        namespace: str | None = None,
        *,
        all_namespaces: bool = False,
        label_selector: str = "",
        field_selector: str = "",
        limit: int | None = None,
        continue_: str = "",
        resource_version: str = "",
        resource_version_match: str = "",
    ) -> Obj:
        """One page (a List with items, metadata.resourceVersion and continue)."""
        ns = None if all_namespaces else self._ns(namespace)
        params = _options(
            label_selector=label_selector,
            field_selector=field_selector,
            limit=limit,
            continue_=continue_,
            resource_version=resource_version,
            resource_version_match=resource_version_match,
        )
        result: Obj = await self.rest.request("GET", self.resource.path(ns), params=params)
        return result

    async def iterate(
        self,
        namespace: str | None = None,
        *,
        all_namespaces: bool = False,
        label_selector: str = "",
        field_selector: str = "",
        page_size: int = 500,
    ) -> AsyncIterator[Obj]:
        """Every item, a page at a time (every page read at the first page's
        resourceVersion, as the server keeps a list's pages consistent)."""
        token = ""
        while True:
            page = await self.list(
                namespace,
                all_namespaces=all_namespaces,
                label_selector=label_selector,
                field_selector=field_selector,
                limit=page_size,
                continue_=token,
            )
            for item in page.get("items") or ():
                yield item
            token = (page.get("metadata") or {}).get("continue") or ""
            if not token:
                return

    async def watch(
        self,
        namespace: str | None = None,
        *,
        all_namespaces: bool = False,
        resource_version: str = "",
        label_selector: str = "",
        field_selector: str = "",
        timeout_seconds: int | None = None,
        allow_watch_bookmarks: bool = False,
        send_initial_events: bool | None = None,
        resource_version_match: str = "",
    ) -> AsyncIterator[WatchEvent]:
        """The events of one watch until the server ends it. An ERROR event
        that carries a Status (a 410 Expired above all) is raised as its ApiError."""
        ns = None if all_namespaces else self._ns(namespace)
        params: Params = {
            "watch": True,
            **_options(
                resource_version=resource_version,
                label_selector=label_selector,
                field_selector=field_selector,
                timeout_seconds=timeout_seconds,
                allow_watch_bookmarks=allow_watch_bookmarks or None,
                send_initial_events=send_initial_events,
                resource_version_match=resource_version_match,
            ),
        }
        async for line in self.rest.stream_lines(self.resource.path(ns), params=params):
            event = orjson.loads(line)
            kind, obj = str(event.get("type", "")), event.get("object") or {}
            if kind == "ERROR":
                raise api_error(int(obj.get("code") or 500), orjson.dumps(obj))
            yield WatchEvent(kind, obj)

    async def create(
        self,
        body: Obj,
        namespace: str | None = None,
        *,
        subresource: str = "",
        name: str = "",
        dry_run: bool = False,
        field_manager: str = "",
        field_validation: str = "",
    ) -> Obj:
        ns = self._ns(namespace if namespace is not None else namespace_of(body))
        path = self.resource.path(ns, name, subresource)
        params = _options(
            dry_run=dry_run, field_manager=field_manager, field_validation=field_validation
        )
        result: Obj = await self.rest.request("POST", path, params=params, body=body)
        return result

    async def update(
        self,
        body: Obj,
        namespace: str | None = None,
        *,
        subresource: str = "",
        dry_run: bool = False,
        field_manager: str = "",
        field_validation: str = "",
    ) -> Obj:
        """PUT body back (its metadata.resourceVersion makes it a compare-and-swap)."""
        name = str((body.get("metadata") or {}).get("name", ""))
        ns = self._ns(namespace if namespace is not None else namespace_of(body))
        params = _options(
            dry_run=dry_run, field_manager=field_manager, field_validation=field_validation
        )
        path = self.resource.path(ns, name, subresource)
        result: Obj = await self.rest.request("PUT", path, params=params, body=body)
        return result

    async def patch(
        self,
        name: str,
        patch: Body,
        namespace: str | None = None,
        *,
        patch_type: PatchType = "merge",
        subresource: str = "",
        dry_run: bool = False,
        field_manager: str = "",
        field_validation: str = "",
        force: bool | None = None,
    ) -> Obj:
        params = _options(
            dry_run=dry_run,
            field_manager=field_manager,
            field_validation=field_validation,
            force=force,
        )
        path = self.resource.path(self._ns(namespace), name, subresource)
        result: Obj = await self.rest.request(
            "PATCH", path, params=params, body=patch, content_type=PATCH_CONTENT_TYPES[patch_type]
        )
        return result

    async def apply(
        self,
        body: Obj,
        namespace: str | None = None,
        *,
        field_manager: str,
        force: bool = False,
        subresource: str = "",
        dry_run: bool = False,
    ) -> Obj:
        """Server-side apply of body (a configuration) as field_manager."""
        name = str((body.get("metadata") or {}).get("name", ""))
        ns = namespace if namespace is not None else namespace_of(body)
        return await self.patch(
            name,
            orjson.dumps(body),
            ns,
            patch_type="apply",
            subresource=subresource,
            dry_run=dry_run,
            field_manager=field_manager,
            force=force or None,
        )

    async def delete(
        self,
        name: str,
        namespace: str | None = None,
        *,
        propagation_policy: str = "",
        grace_period_seconds: int | None = None,
        preconditions: Obj | None = None,
        dry_run: bool = False,
    ) -> Obj:
        """The object as the delete left it (being finalized), or the Status."""
        body: Obj | None = None
        if preconditions is not None:
            body = {"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": preconditions}
        params = _options(
            propagation_policy=propagation_policy,
            grace_period_seconds=grace_period_seconds,
            dry_run=dry_run,
        )
        path = self.resource.path(self._ns(namespace), name)
        result: Obj = await self.rest.request("DELETE", path, params=params, body=body)
        return result

    async def delete_collection(
        self,
        namespace: str | None = None,
        *,
        label_selector: str = "",
        field_selector: str = "",
        propagation_policy: str = "",
        dry_run: bool = False,
    ) -> Obj:
        params = _options(
            label_selector=label_selector,
            field_selector=field_selector,
            propagation_policy=propagation_policy,
            dry_run=dry_run,
        )
        result: Obj = await self.rest.request(
            "DELETE", self.resource.path(self._ns(namespace)), params=params
        )
        return result


def namespace_of(body: Obj) -> str | None:
    """The namespace an object's metadata names, if any."""
    namespace = (body.get("metadata") or {}).get("namespace")
    return str(namespace) if namespace else None


class DynamicClient:
    """ResourceClients over one RestClient."""

    def __init__(self, rest: RestClient) -> None:
        self.rest = rest

    def resource(self, resource: Resource) -> ResourceClient:
        return ResourceClient(self.rest, resource)
