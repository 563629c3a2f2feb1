"""What kube's decoder and encoder make of a built-in kind's JSON before any
validation: kube decodes every built-in object into its Go types and writes it
back from them, so a null struct field is left out, a null map value or list
item is its type's zero value, and an empty map or list is left out (Go's
omitempty; an empty struct stays). A value of the wrong JSON type where the
kind's schema declares one is a 400 ("cannot be handled as a ..."), so the
strategies' rules only ever see values of the types they expect. Strategies
that name Go's types for their fields (strategy.check_decodable) answer first,
with kube's exact words; this catches the rest.

One walk does all of it, driven by the kind's schema: a schema with
additionalProperties is a Go map, one with properties (or none: a part strata
does not describe) a struct, and type array a slice. Custom resources have no
Go types but their metadata (kube keeps the rest as written), so the store
gives them a schema of metadata alone."""

from __future__ import annotations

from typing import Any

from strata.api import errors

Schema = dict[str, Any]
_ZERO: dict[str, Any] = {"string": "", "integer": 0, "number": 0, "boolean": False}
# The one empty list kube reads between decoding and writing: a write's
# `managedFields: []` resets them (its field manager's doing), so it stays here.
_READ_EMPTY = "metadata.managedFields"
_JSON_NAMES = {
    str: "string",
    bool: "bool",
    int: "number",
    float: "number",
    list: "array",
    dict: "object",
}


def _fits(value: Any, kind: str) -> bool:
    if kind == "string":
        return isinstance(value, str)
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "array":
        return isinstance(value, list)
    if kind == "object":
        return isinstance(value, dict)
    return True


def _zero(schema: Schema) -> Any:
    """What Go makes of a null where it holds a value of this schema's type: a
    struct's or a scalar's zero value (a map's or a slice's is nil: null)."""
    if schema.get("type") == "object" and not isinstance(schema.get("additionalProperties"), dict):
        return {}
    return _ZERO.get(schema.get("type", ""))


def _omitted(value: Any, schema: Schema) -> bool:
    """Whether Go's encoder leaves a struct field out: an empty map or slice
    (omitempty); a struct, even empty, stays. The few slices kube's types do not
    mark omitempty (Role.rules, PolicyRule.verbs, PodSpec.containers) Go writes
    as null when empty, through protobuf in etcd; left out here instead, which a
    client reads the same (and validation refuses the last two empty)."""
    if isinstance(value, list):
        return not value
    return value == {} and isinstance(schema.get("additionalProperties"), dict)


def _leaf_fits(value: Any, schema: Schema) -> bool:
    """Whether value is a scalar its schema takes as it is, with nothing under
    it to walk (most of an object's values: checked here without a call to
    _problem or a path built for it)."""
    kind = schema.get("type")
    if kind == "string":
        return isinstance(value, str)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    return False


def _fields_problem(value: dict[str, Any], schema: Schema, path: str) -> str | None:
    """_problem for a struct's fields or a map's values."""
    properties: dict[str, Schema] = schema.get("properties") or {}
    extra = schema.get("additionalProperties")
    values = extra if isinstance(extra, dict) else None
    if not properties and values is None:
        return None  # a part strata does not describe: kept as written
    for name in list(value):
        field = properties.get(name)
        child = field or values
        if child is None:
            continue
        item = value[name]
        if item is None:
            # A null struct field is left out; a null map value is its zero.
            if field is not None:
                del value[name]
            else:
                value[name] = _zero(child)
            continue
        if _leaf_fits(item, child):
            continue
        at = f"{path}.{name}" if path else name
        if found := _problem(item, child, at):
            return found
        if field is not None and at != _READ_EMPTY and _omitted(item, field):
            del value[name]
    return None


def _problem(value: Any, schema: Schema, path: str) -> str | None:
    """The first type mismatch at or under path, the value made what Go makes of
    it on the way (all of it, when there is none)."""
    kind = schema.get("type")
    if kind and not _fits(value, kind):
        given = _JSON_NAMES.get(type(value), "value")
        return f"{path or 'the object'}: expected {kind}, got {given}"
    if isinstance(value, dict):
        return _fields_problem(value, schema, path)
    if isinstance(value, list) and isinstance(items := schema.get("items"), dict):
        for i, item in enumerate(value):
            if item is None:
                value[i] = _zero(items)
                continue
            if _leaf_fits(item, items):
                continue
            if found := _problem(item, items, f"{path}[{i}]"):
                return found
    return None


def decoded(obj: dict[str, Any], schema: Schema) -> str | None:
    """obj as Go's types make it (nulls, empty maps and lists); its first type
    mismatch, if any."""
    return _problem(obj, schema, "")


def check(obj: dict[str, Any], schema: Schema, kind: str, version: str) -> None:
    """kube's decoder's 400 for the first value of the wrong type in obj."""
    if problem := _problem(obj, schema, ""):
        raise errors.undecodable(kind, version, problem)
