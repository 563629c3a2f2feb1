"""OpenAPI documents (/openapi/v3 and one per group-version, and /openapi/v2
converted from them by openapi_v2), built from what the registry serves: the
paths and operations the gateway answers, and each kind's schema as the registry
reports it.

Clients read more than the schemas here. kubectl decides whether the server
validates fields itself (so it need not) by finding, for the kind it writes, a
PATCH operation tagged with that kind's x-kubernetes-group-version-kind that
takes a fieldValidation parameter; kubectl explain finds a kind's schema by the
same tag on the component.
"""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
from aiohttp import web

from services.gateway import openapi_v2
from services.gateway.catalog import APIResource, Catalog
from services.gateway.openapi_v2 import digest
from strata.api import errors, schemas

Doc = dict[str, Any]
META = "io.k8s.apimachinery.pkg.apis.meta.v1"
_REF = "#/components/schemas/"

_STRING = schemas.STRING
# The meta.k8s.io/v1 types every kind's document refers to.
_META_SCHEMAS: dict[str, Doc] = {
    f"{META}.ObjectMeta": schemas.OBJECT_META,
    f"{META}.ListMeta": {
        "type": "object",
        "properties": {
            "resourceVersion": _STRING,
            "continue": _STRING,
            "remainingItemCount": {"type": "integer", "format": "int64"},
        },
    },
    f"{META}.Status": {
        "type": "object",
        "properties": {
            "apiVersion": _STRING,
            "kind": _STRING,
            "metadata": {"$ref": f"{_REF}{META}.ListMeta"},
            "status": _STRING,
            "message": _STRING,
            "reason": _STRING,
            "code": {"type": "integer", "format": "int32"},
            "details": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        },
        "x-kubernetes-group-version-kind": [{"group": "", "kind": "Status", "version": "v1"}],
    },
}
_SCALE = "io.k8s.api.autoscaling.v1.Scale"
_SCALE_SCHEMA: Doc = {
    "type": "object",
    "properties": {
        "apiVersion": _STRING,
        "kind": _STRING,
        "metadata": {"$ref": f"{_REF}{META}.ObjectMeta"},
        "spec": {"type": "object", "properties": {"replicas": {"type": "integer"}}},
        "status": {
            "type": "object",
            "properties": {"replicas": {"type": "integer"}, "selector": _STRING},
        },
    },
    "x-kubernetes-group-version-kind": [{"group": "autoscaling", "kind": "Scale", "version": "v1"}],
}


def _query(name: str, description: str, kind: str = "string") -> Doc:
    return {"name": name, "in": "query", "description": description, "schema": {"type": kind}}


_PRETTY = _query("pretty", "If 'true', the output is pretty printed.")
_DRY_RUN = _query("dryRun", "All: process the request fully but persist nothing.")
_FIELD_MANAGER = _query("fieldManager", "The name of the actor making these changes.")
_FIELD_VALIDATION = _query(
    "fieldValidation",
    "What fields the kind does not know earn: Ignore (dropped quietly), Warn (dropped, "
    "a Warning header each; the default) or Strict (the request fails with 400).",
)
_FORCE = _query("force", "Apply requests only: take over fields other managers own.", "boolean")
_LIST = [
    _query("labelSelector", "Only the objects whose labels match."),
    _query("fieldSelector", "Only the objects whose fields match."),
    _query("limit", "At most this many items; continue for the rest.", "integer"),
    _query("continue", "The token a previous limited list gave, for the next page."),
    _query("resourceVersion", "Which state to answer from."),
    _query("resourceVersionMatch", "How resourceVersion applies: NotOlderThan or Exact."),
    _query("watch", "Stream changes instead of listing.", "boolean"),
    _query("allowWatchBookmarks", "Watches: send BOOKMARK events.", "boolean"),
    _query("sendInitialEvents", "Watches: the current state first.", "boolean"),
    _query("timeoutSeconds", "Watches: end after this long.", "integer"),
]
_DELETE = [
    _DRY_RUN,
    _query("gracePeriodSeconds", "Seconds before the object is deleted.", "integer"),
    _query("propagationPolicy", "Orphan, Background or Foreground."),
]
_PATCH_TYPES = (
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
)
_NAME = {"name": "name", "in": "path", "required": True, "schema": _STRING}
_NAMESPACE = {"name": "namespace", "in": "path", "required": True, "schema": _STRING}


def schema_name(group: str, version: str, kind: str) -> str:
    """The component a kind's schema goes under, named as kube names it."""
    if group == "apiextensions.k8s.io":
        return f"io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.{version}.{kind}"
    if not group or group.endswith(".k8s.io") or "." not in group:
        short = group.split(".")[0] if group else "core"
        return f"io.k8s.api.{short}.{version}.{kind}"
    return ".".join([*reversed(group.split(".")), version, kind])


def _content(ref: str, types: tuple[str, ...] = ("application/json", "application/yaml")) -> Doc:
    return {t: {"schema": {"$ref": f"{_REF}{ref}"}} for t in types}


# The answers kube's OpenAPI lists for each action (every one also 401).
_CODES = {
    "post": ("200", "201", "202"),
    "put": ("200", "201"),
    "patch": ("200", "201"),
    "delete": ("200", "202"),
}
_DESCRIPTIONS = {"200": "OK", "201": "Created", "202": "Accepted"}
# The resources whose DELETE kube's OpenAPI says answers the object (its
# registries that may return the deleted object); every other's is a Status.
_DELETE_ANSWERS_OBJECT = frozenset(
    {
        ("", "persistentvolumeclaims"),
        ("", "persistentvolumes"),
        ("", "pods"),
        ("", "podtemplates"),
        ("", "resourcequotas"),
        ("", "serviceaccounts"),
        ("", "services"),
        ("resource.k8s.io", "deviceclasses"),
        ("resource.k8s.io", "resourceclaims"),
        ("resource.k8s.io", "resourceclaimtemplates"),
        ("resource.k8s.io", "resourceslices"),
        ("storage.k8s.io", "csidrivers"),
        ("storage.k8s.io", "csinodes"),
        ("storage.k8s.io", "storageclasses"),
        ("storage.k8s.io", "volumeattachments"),
        ("storage.k8s.io", "volumeattributesclasses"),
    }
)


def _operation(
    r: APIResource,
    action: str,
    operation_id: str,
    parameters: list[Doc],
    answer: str,
    *,
    gvk: Doc,
    body: str = "",
    body_types: tuple[str, ...] = ("*/*",),
) -> Doc:
    codes = _CODES.get(action, ("200",))
    responses: Doc = {
        code: {"description": _DESCRIPTIONS[code], "content": _content(answer)} for code in codes
    }
    responses["401"] = {"description": "Unauthorized"}
    operation: Doc = {
        "operationId": operation_id,
        "parameters": parameters,
        "responses": responses,
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": gvk,
    }
    if body:
        operation["requestBody"] = {"required": True, "content": _content(body, body_types)}
    return operation


def _kind_schema(r: APIResource) -> Doc:
    """The registry's schema for r's kind, with the fields every kind has."""
    reported: Doc = orjson.loads(r.schema) if r.schema else {"type": "object"}
    properties = dict(reported.get("properties") or {})
    properties.update(apiVersion=_STRING, kind=_STRING)
    properties["metadata"] = {"$ref": f"{_REF}{META}.ObjectMeta"}
    return {
        **reported,
        "type": "object",
        "properties": properties,
        "x-kubernetes-group-version-kind": [
            {"group": r.group, "kind": r.kind, "version": r.version}
        ],
    }


def _list_schema(r: APIResource, item: str) -> Doc:
    kind = r.list_kind or f"{r.kind}List"
    return {
        "type": "object",
        "required": ["items"],
        "properties": {
            "apiVersion": _STRING,
            "kind": _STRING,
            "metadata": {"$ref": f"{_REF}{META}.ListMeta"},
            "items": {"type": "array", "items": {"$ref": f"{_REF}{item}"}},
        },
        "x-kubernetes-group-version-kind": [{"group": r.group, "kind": kind, "version": r.version}],
    }


def _paths(r: APIResource, prefix: str, item: str, items: str, paths: Doc) -> None:
    """The operations the gateway answers for r, under kube's operation ids."""
    gvk = {"group": r.group, "kind": r.kind, "version": r.version}
    words = r.group.removesuffix(".k8s.io").split(".") if r.group else ["core"]
    base = "".join(w.capitalize() for w in words) + r.version.capitalize()
    scope = "Namespaced" if r.namespaced else ""
    collection = (
        f"{prefix}/namespaces/{{namespace}}/{r.name}" if r.namespaced else f"{prefix}/{r.name}"
    )
    verbs = set(r.verbs)
    own: Doc = {"parameters": ([_NAMESPACE] if r.namespaced else []) + [_PRETTY]}
    writes = [_DRY_RUN, _FIELD_MANAGER, _FIELD_VALIDATION]
    if "list" in verbs:
        own["get"] = _operation(r, "list", f"list{base}{scope}{r.kind}", _LIST, items, gvk=gvk)
    if "create" in verbs:
        own["post"] = _operation(
            r, "post", f"create{base}{scope}{r.kind}", writes, item, gvk=gvk, body=item
        )
    if "deletecollection" in verbs:
        own["delete"] = _operation(
            r,
            "deletecollection",
            f"deletecollection{base}{scope}{r.kind}",
            _LIST,
            f"{META}.Status",
            gvk=gvk,
        )
    paths[collection] = own
    if r.namespaced and "list" in verbs:
        paths[f"{prefix}/{r.name}"] = {
            "parameters": [_PRETTY],
            "get": _operation(
                r, "list", f"list{base}{r.kind}ForAllNamespaces", _LIST, items, gvk=gvk
            ),
        }
    for subresource in ("", *r.subresources):
        suffix = subresource.capitalize()
        answer, target = (
            (_SCALE, {"group": "autoscaling", "kind": "Scale", "version": "v1"})
            if subresource == "scale"
            else (item, gvk)
        )
        one: Doc = {"parameters": [_NAME, *own["parameters"]]}
        if "get" in verbs and subresource != "finalize":
            one["get"] = _operation(
                r, "get", f"read{base}{scope}{r.kind}{suffix}", [], answer, gvk=target
            )
        if "update" in verbs:
            one["put"] = _operation(
                r,
                "put",
                f"replace{base}{scope}{r.kind}{suffix}",
                writes,
                answer,
                gvk=target,
                body=answer,
            )
        if "patch" in verbs and subresource != "finalize":
            one["patch"] = _operation(
                r,
                "patch",
                f"patch{base}{scope}{r.kind}{suffix}",
                [*writes, _FORCE],
                answer,
                gvk=target,
                body=f"{META}.Patch",
                body_types=_PATCH_TYPES,
            )
        if "delete" in verbs and not subresource:
            deleted = item if (r.group, r.name) in _DELETE_ANSWERS_OBJECT else f"{META}.Status"
            one["delete"] = _operation(
                r, "delete", f"delete{base}{scope}{r.kind}", _DELETE, deleted, gvk=gvk
            )
        path = f"{collection}/{{name}}" + (f"/{subresource}" if subresource else "")
        paths[path] = one


def group_version_path(group: str, version: str) -> str:
    """How /openapi/v3 names a group-version's document: "api/v1", "apis/apps/v1"."""
    return f"apis/{group}/{version}" if group else f"api/{version}"


def document(group: str, version: str, served: list[APIResource], server_version: str) -> Doc:
    """The OpenAPI v3 document of one group-version."""
    prefix = "/" + group_version_path(group, version)
    schemas: Doc = {**_META_SCHEMAS, f"{META}.Patch": {"type": "object"}}
    paths: Doc = {}
    for r in sorted(served, key=lambda r: r.name):
        item = schema_name(r.group, r.version, r.kind)
        items = schema_name(r.group, r.version, r.list_kind or f"{r.kind}List")
        schemas[item] = _kind_schema(r)
        schemas[items] = _list_schema(r, item)
        if "scale" in r.subresources:
            schemas[_SCALE] = _SCALE_SCHEMA
        _paths(r, prefix, item, items, paths)
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": server_version},
        "paths": paths,
        "components": {"schemas": schemas},
    }


class OpenAPIv3:
    """The /openapi/v3 routes: the index of group-version documents, each under a
    URL that carries its hash, and the documents themselves."""

    def __init__(self, catalog: Catalog, server_version: str) -> None:
        self._catalog = catalog
        self._server_version = server_version
        self._built_from: list[tuple[tuple[str, str, str], bytes]] = []
        self._documents: dict[str, bytes] = {}
        # /openapi/v2's bodies and the v3 documents they were made from.
        self._v2: tuple[dict[str, bytes], openapi_v2.Bodies] | None = None
        self._v2_lock = asyncio.Lock()

    async def _current(self) -> dict[str, bytes]:
        """Every group-version's document as JSON, rebuilt when what is served
        changes (read as fresh as discovery reads it: a CRD Established a moment
        ago is described)."""
        resources = await self._catalog.discoverable()
        served = sorted((key, r.SerializeToString()) for key, r in resources.items())
        if served != self._built_from:
            by_group_version: dict[tuple[str, str], list[APIResource]] = {}
            for (group, version, _), r in resources.items():
                by_group_version.setdefault((group, version), []).append(r)
            self._documents = {
                group_version_path(g, v): orjson.dumps(document(g, v, rs, self._server_version))
                for (g, v), rs in sorted(by_group_version.items())
            }
            self._built_from = served
        return self._documents

    async def _v2_bodies(self) -> openapi_v2.Bodies:
        """/openapi/v2's bodies, made again (once, off the loop) only when the
        v3 documents were."""
        documents = await self._current()
        async with self._v2_lock:
            if self._v2 is None or self._v2[0] is not documents:
                bodies = await asyncio.to_thread(
                    openapi_v2.build, list(documents.values()), self._server_version
                )
                self._v2 = (documents, bodies)
            return self._v2[1]

    async def v2(self, request: web.Request) -> web.Response:
        """/openapi/v2 in JSON or in gnostic's protobuf, as the client asks."""
        return openapi_v2.respond(request, await self._v2_bodies())

    async def index(self, _: web.Request) -> web.Response:
        paths = {
            path: {"serverRelativeURL": f"/openapi/v3/{path}?hash={digest(body)}"}
            for path, body in (await self._current()).items()
        }
        # kube writes the index without a Content-Type, and Go's server sniffs text.
        body = orjson.dumps({"paths": paths})
        return web.Response(body=body, content_type="text/plain", charset="utf-8")

    async def group_version(self, request: web.Request) -> web.Response:
        path = request.match_info["path"].strip("/")
        body = (await self._current()).get(path)
        if body is None:
            raise errors.path_not_found()
        current = digest(body)
        asked = request.query.get("hash")
        if asked is not None and asked != current:
            # As kube: the URL of an old hash leads to the current document.
            raise web.HTTPMovedPermanently(f"/openapi/v3/{path}?hash={current}")
        response = web.Response(body=body, content_type="application/json")
        response.headers["Etag"] = f'"{current}"'
        response.headers["Cache-Control"] = (
            "public, immutable" if asked is not None else "no-cache, private"
        )
        return response
