"""OpenAPI v3 schemas both sides need: the registry prunes what they do not
describe (kube's decoder drops unknown fields), the gateway publishes them under
/openapi/v3. ObjectMeta is every kind's metadata."""

from __future__ import annotations

from typing import Any

Schema = dict[str, Any]

STRING: Schema = {"type": "string"}
BOOLEAN: Schema = {"type": "boolean"}
INTEGER: Schema = {"type": "integer", "format": "int32"}
LONG: Schema = {"type": "integer", "format": "int64"}
TIME: Schema = {"type": "string", "format": "date-time"}
STRING_MAP: Schema = {"type": "object", "additionalProperties": STRING}
# Anything goes: a part strata does not describe field by field.
OPEN: Schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


def obj(description: str = "", /, **properties: Schema) -> Schema:
    """An object schema with these properties (and nothing else)."""
    schema: Schema = {"type": "object", "properties": properties}
    if description:
        schema["description"] = description
    return schema


def array(items: Schema) -> Schema:
    return {"type": "array", "items": items}


def merged(items: Schema, key: str, *map_keys: str) -> Schema:
    """A list a strategic merge patch merges item by item, by key (what clients
    such as kubectl read off the OpenAPI to compute their patches), and that
    server-side apply merges by map_keys (key alone when none are given)."""
    return {
        **array(items),
        "x-kubernetes-patch-merge-key": key,
        "x-kubernetes-patch-strategy": "merge",
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": list(map_keys or (key,)),
    }


OWNER_REFERENCE = obj(
    apiVersion=STRING,
    kind=STRING,
    name=STRING,
    uid=STRING,
    controller=BOOLEAN,
    blockOwnerDeletion=BOOLEAN,
)
OWNER_REFERENCE["required"] = ["apiVersion", "kind", "name", "uid"]

OBJECT_META = obj(
    "Metadata every persisted object has.",
    name=STRING,
    generateName=STRING,
    namespace=STRING,
    selfLink=STRING,
    uid=STRING,
    resourceVersion=STRING,
    generation=LONG,
    creationTimestamp=TIME,
    deletionTimestamp=TIME,
    deletionGracePeriodSeconds=LONG,
    labels=STRING_MAP,
    annotations=STRING_MAP,
    ownerReferences=merged(OWNER_REFERENCE, "uid"),
    finalizers={
        **array(STRING),
        "x-kubernetes-patch-strategy": "merge",
        "x-kubernetes-list-type": "set",
    },
    managedFields=array(OPEN),
)
