"""Go's UnmarshalTypeError for a body kube's decoder fills a Go struct from:
the first field, in the body's order, whose JSON type the field's Go type
cannot hold, in Go's words. The gateway decodes a few bodies itself
(DeleteOptions, the reviews) and refuses them as kube does, before anything
reads their fields."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from strata.api import gojson


@dataclass(frozen=True)
class Struct:
    """A Go struct: its type's name (in an error's "of type"), its own (before
    a field's path) and its fields' Go types."""

    type_name: str
    name: str
    fields: dict[str, GoType]


@dataclass(frozen=True)
class Slice:
    """A slice: its type's name ("[]string", "v1.ExtraValue") and its items'."""

    type_name: str
    items: GoType


@dataclass(frozen=True)
class Map:
    """A map with string keys: its type's name and its values' type."""

    type_name: str
    values: GoType


# Or a scalar's Go type by name: "string", "bool", "int64", a named string type
# ("v1.DeletionPropagation"); "[]string" is a Slice of strings.
GoType = Struct | Slice | Map | str


def _number(raw: bytes, field: str) -> str:
    """A number as the body spells it, found again by its field's path."""
    found: Any = json.loads(raw, parse_float=str, parse_int=str)
    for key in field.split("."):
        found = found.get(key) if isinstance(found, dict) else None
    return f"number {found}" if isinstance(found, str) else "number"


def _unfit(value: Any, go_type: GoType, raw: bytes, field: str) -> str | None:
    """What Go's decoder calls value if a field of go_type cannot hold it: a
    number that is no int64 by its text (read again from raw)."""
    if isinstance(go_type, Struct | Map):
        fits = isinstance(value, dict)
    elif isinstance(go_type, Slice) or go_type.startswith("[]"):
        fits = isinstance(value, list)
    elif go_type == "bool":
        fits = isinstance(value, bool)
    elif go_type == "int64":
        if type(value) is int and -(2**63) <= value < 2**63:
            return None
        if isinstance(value, int | float) and not isinstance(value, bool):
            return _number(raw, field)
        fits = False
    else:
        fits = isinstance(value, str)
    return None if fits else gojson.type_name(value)


def _type_name(go_type: GoType) -> str:
    return go_type if isinstance(go_type, str) else go_type.type_name


def _items(go_type: GoType) -> GoType | None:
    if isinstance(go_type, Slice):
        return go_type.items
    if isinstance(go_type, str) and go_type.startswith("[]"):
        return go_type[2:]
    return None


def type_error(value: Any, go_type: GoType, struct: str, field: str, raw: bytes) -> str | None:
    """Go's first UnmarshalTypeError decoding value into a field of go_type
    (field: its path, in the struct named struct; "" for the body itself):
    keys matched exactly and taken in the body's order, a null leaving its
    field alone. raw is the body, for the spelling of a number."""
    if value is None:
        return None
    if (unfit := _unfit(value, go_type, raw, field)) is not None:
        return (
            f"json: cannot unmarshal {unfit} into Go struct field {struct}.{field} "
            f"of type {_type_name(go_type)}"
        )
    if isinstance(go_type, Struct):
        for key, item in value.items():
            child = go_type.fields.get(key)
            path = f"{field}.{key}" if field else key
            if child is not None and (found := type_error(item, child, go_type.name, path, raw)):
                return found
    elif isinstance(go_type, Map):
        for item in value.values():
            if found := type_error(item, go_type.values, struct, field, raw):
                return found
    elif (items := _items(go_type)) is not None:
        for item in value:
            if found := type_error(item, items, struct, field, raw):
                return found
    return None
