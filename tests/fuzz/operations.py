"""What the fuzzer sends requests to, read from what the gateway serves: every
operation of its OpenAPI document (/openapi/v2, every path and method), with
the parameters each declares and the schema of its body; and the operations
served that the document leaves out, which discovery names (a subresource's
create, such as a ServiceAccount's token) or kube serves on every list (the
legacy /watch/ paths)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

Doc = dict[str, Any]
METHODS = ("get", "put", "post", "patch", "delete")


@dataclass(frozen=True, kw_only=True)
class Parameter:
    name: str
    where: str  # "path" or "query"
    type: str  # "string", "integer" or "boolean"


@dataclass(frozen=True, kw_only=True)
class Operation:
    method: str
    path: str  # the document's template: /api/v1/namespaces/{namespace}/configmaps
    # x-kubernetes-action: get, list, post, put, patch, delete, deletecollection;
    # "watch" for a legacy /watch/ path.
    action: str
    parameters: tuple[Parameter, ...]
    consumes: tuple[str, ...] = ()
    body: Doc | None = None  # the body's schema, references left as they are
    # (apiVersion, kind) of the body, else of the answer.
    kind: tuple[str, str] = ("", "")
    documented: bool = True

    @property
    def key(self) -> tuple[str, str]:
        return self.path, self.method

    @property
    def segments(self) -> list[str]:
        return self.path.strip("/").split("/")

    @property
    def resource(self) -> str:
        """The collection the path is in: configmaps, namespaces, ..."""
        words = [s for s in self.segments if s != "watch"]
        if "{name}" in words:
            return words[words.index("{name}") - 1]
        return words[-1]

    @property
    def subresource(self) -> str:
        words = self.segments
        if "{name}" in words and words[-1] != "{name}":
            return words[-1]
        return ""

    def parameter(self, name: str) -> Parameter | None:
        return next((p for p in self.parameters if p.name == name), None)


def _kind(operation: Doc, body: Doc | None, definitions: Doc) -> tuple[str, str]:
    gvk = operation.get("x-kubernetes-group-version-kind") or {}
    if body and "$ref" in body:
        found = definitions.get(body["$ref"].rsplit("/", 1)[-1], {})
        gvk = (found.get("x-kubernetes-group-version-kind") or [gvk])[0]
    group, version = gvk.get("group", ""), gvk.get("version", "")
    return (f"{group}/{version}" if group else version), gvk.get("kind", "")


def _operation(path: str, method: str, shared: list[Doc], doc: Doc, definitions: Doc) -> Operation:
    declared = [*shared, *doc.get("parameters", [])]
    body = next((p.get("schema") for p in declared if p.get("in") == "body"), None)
    return Operation(
        method=method,
        path=path,
        action=doc.get("x-kubernetes-action", method),
        parameters=tuple(
            Parameter(name=p["name"], where=p["in"], type=p.get("type", "string"))
            for p in declared
            if p.get("in") in ("path", "query")
        ),
        consumes=tuple(doc.get("consumes", ())),
        body=body,
        kind=_kind(doc, body, definitions),
    )


def documented(document: Doc) -> list[Operation]:
    """Every operation of an OpenAPI v2 document, in its order."""
    definitions = document.get("definitions", {})
    return [
        _operation(path, method, item.get("parameters", []), item[method], definitions)
        for path, item in document["paths"].items()
        for method in METHODS
        if method in item
    ]


def _legacy_watch(operation: Operation, listing: Operation) -> Operation:
    """GET .../watch/... for a list (or for one object, beside its get), with
    the list's query parameters."""
    words = operation.segments
    at = 2 if words[0] == "api" else 3
    return Operation(
        method="get",
        path="/" + "/".join([*words[:at], "watch", *words[at:]]),
        action="watch",
        parameters=(
            *(p for p in operation.parameters if p.where == "path"),
            *(p for p in listing.parameters if p.where == "query" and p.name != "watch"),
        ),
        kind=operation.kind,
        documented=False,
    )


def _subresource_create(item: Operation, subresource: str) -> Operation:
    query = ("dryRun", "fieldManager", "fieldValidation", "pretty")
    return Operation(
        method="post",
        path=f"{item.path}/{subresource}",
        action="post",
        parameters=(
            *(p for p in item.parameters if p.where == "path"),
            *(Parameter(name=n, where="query", type="string") for n in query),
        ),
        consumes=("*/*",),
        documented=False,
    )


def undocumented(
    operations: list[Operation], discovered: Iterable[tuple[str, str, list[str]]]
) -> list[Operation]:
    """The operations served beside those of the document: discovered is
    (group-version path, resource name as discovery gives it, its verbs)."""
    known = {o.key for o in operations}
    # An object's get by its collection's path.
    items = {
        o.path.rsplit("/", 1)[0]: o
        for o in operations
        if o.action == "get" and o.path.endswith("/{name}")
    }
    added: list[Operation] = []
    for prefix, name, verbs in discovered:
        resource, _, subresource = name.partition("/")
        if not subresource or "create" not in verbs:
            continue
        for collection, item in items.items():
            create = (f"{item.path}/{subresource}", "post")
            ours = collection.startswith(prefix + "/") and item.resource == resource
            if ours and create not in known:
                added.append(_subresource_create(item, subresource))
    for listing in operations:
        if listing.action != "list":
            continue
        added.append(_legacy_watch(listing, listing))
        if (one := items.get(listing.path)) is not None:
            added.append(_legacy_watch(one, listing))
    return added
