"""What kube's decoder makes of a built-in kind's JSON before any validation:
nulls are taken as Go's decoder takes them (a null field is left out, a null
list item is its type's zero value), and a value of the wrong JSON type where the
kind's schema declares one is a 400 ("cannot be handled as a ..."), so the
strategies' rules only ever see values of the types they expect. Strategies
that name Go's types for their fields (strategy.check_decodable) answer first,
with kube's exact words; this catches the rest."""

from __future__ import annotations

from typing import Any

from strata.api import errors

Schema = dict[str, Any]
_ZERO: dict[str, Any] = {"string": "", "integer": 0, "number": 0, "boolean": False}
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


def _problem(value: Any, schema: Schema, path: str) -> str | None:
    """The first type mismatch at or under path, nulls replaced on the way (all
    of them, when there is none)."""
    kind = schema.get("type")
    if kind and not _fits(value, kind):
        given = _JSON_NAMES.get(type(value), "value")
        return f"{path or 'the object'}: expected {kind}, got {given}"
    if isinstance(value, dict):
        properties: dict[str, Schema] = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        for name in list(value):
            child = properties.get(name) or (extra if isinstance(extra, dict) else None)
            if child is None:
                continue
            if value[name] is None:
                del value[name]
                continue
            if found := _problem(value[name], child, f"{path}.{name}" if path else name):
                return found
    elif isinstance(value, list) and isinstance(items := schema.get("items"), dict):
        for i, item in enumerate(value):
            if item is None:
                value[i] = {} if items.get("type") == "object" else _ZERO.get(items.get("type", ""))
                continue
            if found := _problem(item, items, f"{path}[{i}]"):
                return found
    return None


def decoded(obj: dict[str, Any], schema: Schema) -> str | None:
    """obj's nulls taken as Go takes them; its first type mismatch, if any."""
    return _problem(obj, schema, "")


def check(obj: dict[str, Any], schema: Schema, kind: str, version: str) -> None:
    """kube's decoder's 400 for the first value of the wrong type in obj."""
    if problem := _problem(obj, schema, ""):
        raise errors.undecodable(kind, version, problem)
