"""Whether a CRD version's openAPIV3Schema is one strata can serve: kube's
structural schema rules (a type everywhere outside value validations, items for
arrays, metadata restricted to name and generateName, ...) and its other CRD
schema checks, with kube's field paths and messages."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

from services.registry.generic import patterns
from services.registry.generic.schema import (
    EMBEDDED,
    INT_OR_STRING,
    PRESERVE,
    Schema,
    prune,
    validate,
)
from strata.api.causes import forbidden, invalid_value, not_supported, required
from strata.api.errors import Cause

TYPES = ("array", "boolean", "integer", "number", "object", "string")
_ROOT, _ITEMS, _FIELD = "root", "items", "field"
_EMPTY_TYPE = {
    _ROOT: "must not be empty at the root",
    _ITEMS: "must not be empty for specified array items",
    _FIELD: "must not be empty for specified object fields",
}
_JUNCTORS = ("allOf", "anyOf", "oneOf")
# What a value validation under allOf/anyOf/oneOf/not may not say.
_STRUCTURAL_ONLY = {
    "type": "must be empty to be structural",
    "additionalProperties": "must be undefined to be structural",
    "default": "must be undefined to be structural",
    "title": "must be empty to be structural",
    "description": "must be empty to be structural",
    "nullable": "must be false to be structural",
    PRESERVE: "must be false to be structural",
    EMBEDDED: "must be false to be structural",
    INT_OR_STRING: "must be false to be structural",
}


def schema_causes(schema: Any, path: str) -> list[Cause]:
    """The causes that make schema (at path) unusable for a CRD version."""
    if not isinstance(schema, dict):
        return [invalid_value(path, schema, "must be an object")]
    return list(_node_causes(schema, _ROOT, path))


def _node_causes(node: Schema, level: str, path: str) -> Iterator[Cause]:
    kind = node.get("type", "")
    if "$ref" in node:
        yield forbidden(f"{path}.$ref", "$ref is not supported")
    if kind and kind not in TYPES:
        yield not_supported(f"{path}.type", kind, TYPES)
    if node.get(EMBEDDED) and kind != "object":
        detail = "must be object if x-kubernetes-embedded-resource is true"
        yield (
            invalid_value(f"{path}.type", kind, detail)
            if kind
            else required(f"{path}.type", detail)
        )
    elif not kind and not node.get(INT_OR_STRING) and not node.get(PRESERVE):
        yield required(f"{path}.type", _EMPTY_TYPE[level])
    if level == _ROOT and kind and kind != "object":
        yield invalid_value(f"{path}.type", kind, "must be object at the root")
    if node.get(INT_OR_STRING) and node.get(PRESERVE):
        yield invalid_value(
            f"{path}.{PRESERVE}", True, "must be false if x-kubernetes-int-or-string is true"
        )
    if node.get("uniqueItems") is True:
        yield forbidden(
            f"{path}.uniqueItems",
            "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
        )
    if kind == "array" and "items" not in node:
        yield required(f"{path}.items", "must be specified")
    items = node.get("items")
    if isinstance(items, dict):
        yield from _node_causes(items, _ITEMS, f"{path}.items")
    elif items is not None:
        yield invalid_value(f"{path}.items", items, "must be a schema")
    properties = node.get("properties") or {}
    extra = node.get("additionalProperties")
    if extra is not None:
        if level == _ROOT:
            yield forbidden(f"{path}.additionalProperties", "must not be used at the root")
        if properties and (extra is False or isinstance(extra, dict)):
            yield forbidden(
                f"{path}.additionalProperties",
                "additionalProperties and properties are mutual exclusive",
            )
        if isinstance(extra, dict):
            yield from _node_causes(extra, _FIELD, f"{path}.additionalProperties")
    for name, sub in sorted(properties.items()):
        at = f"{path}.properties[{name}]"
        if not isinstance(sub, dict):
            yield invalid_value(at, sub, "must be a schema")
            continue
        yield from _node_causes(sub, _FIELD, at)
    if level == _ROOT or node.get(EMBEDDED):
        yield from _metadata_causes(properties, path, root=level == _ROOT)
    if (pattern := node.get("pattern")) is not None:
        yield from _pattern_causes(pattern, f"{path}.pattern")
    yield from _value_validation_causes(node, path)
    if "default" in node:
        yield from _default_causes(node, path)


def _metadata_causes(properties: dict[str, Any], path: str, *, root: bool) -> Iterator[Cause]:
    for name, wanted in (("kind", "string"), ("apiVersion", "string"), ("metadata", "object")):
        sub = properties.get(name)
        if isinstance(sub, dict) and sub.get("type") != wanted:
            yield invalid_value(
                f"{path}.properties[{name}].type", sub.get("type", ""), f"must be {wanted}"
            )
    metadata = properties.get("metadata")
    if root and isinstance(metadata, dict):
        said = {k for k in metadata if k not in ("type", "properties")}
        fields = set(metadata.get("properties") or {})
        if said or not fields <= {"name", "generateName"}:
            yield forbidden(
                f"{path}.properties[metadata]",
                "must not specify anything other than name and generateName, but metadata is "
                "implicitly specified",
            )


def _pattern_causes(pattern: Any, path: str) -> Iterator[Cause]:
    if error := patterns.compile_error(str(pattern)):
        yield invalid_value(
            path, pattern, f"must be a valid regular expression, but isn't: {error}"
        )


def _value_validation_causes(node: Schema, path: str) -> Iterator[Cause]:
    """allOf/anyOf/oneOf/not hold value validations only (kube's one exception:
    the int-or-string anyOf of an integer and a string)."""
    int_or_string = [{"type": "integer"}, {"type": "string"}]
    for junctor in _JUNCTORS:
        for i, sub in enumerate(node.get(junctor) or ()):
            if not isinstance(sub, dict):
                continue
            if junctor == "anyOf" and node.get(junctor) == int_or_string:
                continue
            yield from _nested_causes(sub, f"{path}.{junctor}[{i}]")
    if isinstance(not_ := node.get("not"), dict):
        yield from _nested_causes(not_, f"{path}.not")


def _nested_causes(node: Schema, path: str) -> Iterator[Cause]:
    for name, detail in _STRUCTURAL_ONLY.items():
        if node.get(name):
            yield forbidden(f"{path}.{name}", detail)
    if "metadata" in (node.get("properties") or {}):
        yield forbidden(f"{path}.properties[metadata]", "must not be specified in a nested context")
    for name, sub in (node.get("properties") or {}).items():
        if isinstance(sub, dict):
            yield from _nested_causes(sub, f"{path}.properties[{name}]")
    if isinstance(items := node.get("items"), dict):
        yield from _nested_causes(items, f"{path}.items")
    yield from _value_validation_causes(node, path)


def _default_causes(node: Schema, path: str) -> Iterator[Cause]:
    """A default must be valid against its own schema and already pruned."""
    value = node["default"]
    at = f"{path}.default"
    bare = {k: v for k, v in node.items() if k != "default"}
    yield from validate(value, bare, at, root=False)
    if isinstance(value, dict | list):
        pruned = copy.deepcopy(value)
        for field in prune(pruned, bare, at, root=False):
            yield invalid_value(at, value, f"must not have unknown fields: {field}")
