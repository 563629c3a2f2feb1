"""OpenAPI v3 structural schemas at work on objects: pruning of the fields a
schema does not know (the Store's, for every kind: a built-in kind's schema or a
CRD version's), and, for custom resources, validation with the field errors
kube-apiserver gives (its go-openapi validator's messages, turned into field
causes as apiextensions-apiserver turns them) and defaulting.

A CRD version's schema is its `schema.openAPIV3Schema`, already checked to be
structural (services.registry.extensions.schema_structure).
"""

from __future__ import annotations

import base64
import binascii
import copy
import ipaddress
import re
from collections.abc import Callable, Iterator
from datetime import date, datetime
from typing import Any

import orjson

from services.registry.generic import patterns
from strata.api import names
from strata.api.causes import (
    invalid_value,
    not_supported,
    required,
    too_long,
    too_many,
    type_invalid,
)
from strata.api.errors import Cause
from strata.api.schemas import OBJECT_META

Schema = dict[str, Any]
Obj = dict[str, Any]
PRESERVE = "x-kubernetes-preserve-unknown-fields"
INT_OR_STRING = "x-kubernetes-int-or-string"
EMBEDDED = "x-kubernetes-embedded-resource"
# What every object has at its root whatever its schema says.
ROOT_FIELDS = frozenset({"apiVersion", "kind", "metadata"})


def _type_name(value: Any) -> str:
    """The JSON type of a value as go-openapi names it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _has_type(value: Any, schema: Schema) -> bool:
    if schema.get(INT_OR_STRING):
        return _type_name(value) in ("integer", "string")
    wanted = schema.get("type", "")
    actual = _type_name(value)
    return not wanted or actual == wanted or (wanted == "number" and actual == "integer")


def _number(value: float) -> str:
    """A bound as Go's %v prints a float64."""
    if isinstance(value, float) and not value.is_integer():
        return repr(value)
    return str(int(value))


_DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_MAC = re.compile(r"^([0-9A-Fa-f]{2}[:-]){5}[0-9A-Fa-f]{2}$")
_UUID = re.compile(r"^[0-9a-fA-F]{8}(-?[0-9a-fA-F]{4}){3}-?[0-9a-fA-F]{12}$")
_DURATION = re.compile(r"^-?([0-9]+(\.[0-9]*)?(ns|us|µs|ms|s|m|h|d|w))+$")
_HEX_COLOR = re.compile(r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$")


def _is_date_time(value: str) -> bool:
    if not _DATE_TIME.match(value):
        return False
    try:
        datetime.fromisoformat(value.replace("z", "Z"))
    except ValueError:
        return False
    return True


def _is_date(value: str) -> bool:
    try:
        return len(value) == 10 and bool(date.fromisoformat(value))
    except ValueError:
        return False


def _parses(parse: Callable[[str], object]) -> Callable[[str], bool]:
    def check(value: str) -> bool:
        try:
            parse(value)
        except ValueError:
            return False
        return True

    return check


def _is_base64(value: str) -> bool:
    try:
        base64.b64decode(value, validate=True)
    except binascii.Error:
        return False
    return True


# kube's string formats that validate (others, int32 and float among them,
# say nothing about a string and pass).
FORMATS: dict[str, Callable[[str], bool]] = {
    "date-time": _is_date_time,
    "datetime": _is_date_time,
    "date": _is_date,
    "email": lambda v: bool(_EMAIL.match(v)),
    "hostname": lambda v: not names.dns1123_subdomain_errors(v.lower()),
    "ipv4": _parses(ipaddress.IPv4Address),
    "ipv6": _parses(ipaddress.IPv6Address),
    "cidr": _parses(lambda v: ipaddress.ip_network(v, strict=False)),
    "mac": lambda v: bool(_MAC.match(v)),
    "uuid": lambda v: bool(_UUID.match(v)),
    "uuid3": lambda v: bool(_UUID.match(v)),
    "uuid4": lambda v: bool(_UUID.match(v)),
    "uuid5": lambda v: bool(_UUID.match(v)),
    "byte": _is_base64,
    "duration": lambda v: bool(_DURATION.match(v)),
    "hexcolor": lambda v: bool(_HEX_COLOR.match(v)),
}


def field_path(path: str, name: str) -> str:
    """The path of field name in the object at path ("" is the root)."""
    return f"{path}.{name}" if path else name


def validate(value: Any, schema: Schema, path: str = "", *, root: bool = True) -> list[Cause]:
    """The field causes of value against schema (at the root, an object whose
    apiVersion, kind and metadata are the API's to check, not the schema's)."""
    causes: list[Cause] = []
    untyped = not schema.get("type") and not schema.get(INT_OR_STRING)
    if value is None and (schema.get("nullable") or untyped):
        return causes
    if not _has_type(value, schema):
        kind = "integer,string" if schema.get(INT_OR_STRING) else schema["type"]
        detail = f'{path} in body must be of type {kind}: "{_type_name(value)}"'
        return [type_invalid(path, _type_name(value), detail)]
    if "enum" in schema and not any(_equal(value, e) for e in schema["enum"]):
        allowed = tuple(
            e if isinstance(e, str) else orjson.dumps(e).decode() for e in schema["enum"]
        )
        causes.append(not_supported(path, value, allowed))
    if isinstance(value, str):
        causes.extend(_string_causes(value, schema, path))
    elif isinstance(value, int | float) and not isinstance(value, bool):
        causes.extend(_number_causes(value, schema, path))
    elif isinstance(value, list):
        causes.extend(_array_causes(value, schema, path))
    elif isinstance(value, dict):
        causes.extend(_object_causes(value, schema, path, root))
    causes.extend(_combinator_causes(value, schema, path, root))
    return causes


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    return bool(a == b)


def _string_causes(value: str, schema: Schema, path: str) -> Iterator[Cause]:
    if (limit := schema.get("maxLength")) is not None and len(value) > limit:
        yield too_long(path, limit)
    if (least := schema.get("minLength")) is not None and len(value) < least:
        yield invalid_value(path, value, f"{path} in body should be at least {least} chars long")
    if (pattern := schema.get("pattern")) is not None:
        yield from _pattern_causes(value, pattern, path)
    fmt = schema.get("format", "")
    check = FORMATS.get(fmt)
    if check is not None and not check(value):
        yield type_invalid(path, value, f'{path} in body must be of type {fmt}: "{value}"')


def _pattern_causes(value: str, pattern: str, path: str) -> Iterator[Cause]:
    """kube's answer to a value its pattern (RE2, as Go's regexp) does not
    match, or to any value when the pattern does not compile (a CRD stored
    before strata checked patterns as Go does may hold one)."""
    try:
        if patterns.matches(pattern, value):
            return
    except patterns.PatternError as e:
        pattern = f"{pattern}, but pattern is invalid: {e}"
    yield invalid_value(path, value, f"{path} in body should match '{pattern}'")


def _number_causes(value: float, schema: Schema, path: str) -> Iterator[Cause]:
    if (least := schema.get("minimum")) is not None:
        if schema.get("exclusiveMinimum") and value <= least:
            yield invalid_value(
                path, value, f"{path} in body should be greater than {_number(least)}"
            )
        elif value < least:
            yield invalid_value(
                path, value, f"{path} in body should be greater than or equal to {_number(least)}"
            )
    if (most := schema.get("maximum")) is not None:
        if schema.get("exclusiveMaximum") and value >= most:
            yield invalid_value(path, value, f"{path} in body should be less than {_number(most)}")
        elif value > most:
            yield invalid_value(
                path, value, f"{path} in body should be less than or equal to {_number(most)}"
            )
    if (factor := schema.get("multipleOf")) and (value / factor) % 1 != 0:
        detail = f"{path} in body should be a multiple of {_number(factor)}"
        yield invalid_value(path, value, detail)


def _array_causes(value: list[Any], schema: Schema, path: str) -> Iterator[Cause]:
    if (most := schema.get("maxItems")) is not None and len(value) > most:
        yield too_many(path, len(value), most)
    if (least := schema.get("minItems")) is not None and len(value) < least:
        yield invalid_value(path, len(value), f"{path} in body should have at least {least} items")
    items = schema.get("items")
    if isinstance(items, dict):
        for i, item in enumerate(value):
            yield from validate(item, items, f"{path}[{i}]", root=False)


def _object_causes(value: Obj, schema: Schema, path: str, root: bool) -> Iterator[Cause]:
    if (most := schema.get("maxProperties")) is not None and len(value) > most:
        yield too_many(path, len(value), most)
    if (least := schema.get("minProperties")) is not None and len(value) < least:
        yield invalid_value(
            path, len(value), f"{path} in body should have at least {least} properties"
        )
    skipped = ROOT_FIELDS if root or schema.get(EMBEDDED) else frozenset()
    for name in schema.get("required") or ():
        if name not in value and name not in skipped:
            yield required(field_path(path, name), "")
    properties: dict[str, Schema] = schema.get("properties") or {}
    extra = schema.get("additionalProperties")
    for name, item in value.items():
        if name in skipped:
            continue
        if name in properties:
            yield from validate(item, properties[name], field_path(path, name), root=False)
        elif isinstance(extra, dict):
            yield from validate(item, extra, field_path(path, name), root=False)


def _combinator_causes(value: Any, schema: Schema, path: str, root: bool) -> Iterator[Cause]:
    """allOf, anyOf, oneOf and not: value checks only (structural schemas keep
    types out of them)."""
    shown = path or "."
    for sub in schema.get("allOf") or ():
        yield from validate(value, sub, path, root=root)
    any_of = schema.get("anyOf") or ()
    if any_of and all(validate(value, sub, path, root=root) for sub in any_of):
        yield invalid_value(path, value, f'"{shown}" must validate at least one schema (anyOf)')
    one_of = schema.get("oneOf") or ()
    if one_of and sum(not validate(value, sub, path, root=root) for sub in one_of) != 1:
        yield invalid_value(path, value, f'"{shown}" must validate one and only one schema (oneOf)')
    if (not_ := schema.get("not")) is not None and not validate(value, not_, path, root=root):
        yield invalid_value(path, value, f'"{shown}" must not validate the schema (not)')


def prune(value: Any, schema: Schema, path: str = "", *, root: bool = True) -> list[str]:
    """Drop, in place, every field schema does not specify (unless it preserves
    unknown fields there), metadata's included; the paths dropped, in the order
    met, for the request's fieldValidation."""
    dropped: list[str] = []
    if isinstance(value, dict):
        kept = ROOT_FIELDS if root or schema.get(EMBEDDED) else frozenset()
        properties: dict[str, Schema] = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        for name in list(value):
            if name == "metadata" and root:
                # An object's own metadata is ObjectMeta whatever its schema says.
                dropped += prune(value[name], OBJECT_META, "metadata", root=False)
            elif name in kept:
                continue
            elif name in properties:
                dropped += prune(value[name], properties[name], field_path(path, name), root=False)
            elif isinstance(extra, dict):
                dropped += prune(value[name], extra, field_path(path, name), root=False)
            elif not (extra is True or schema.get(PRESERVE)):
                del value[name]
                dropped.append(field_path(path, name))
    elif isinstance(value, list) and isinstance(items := schema.get("items"), dict):
        for i, item in enumerate(value):
            dropped += prune(item, items, f"{path}[{i}]", root=False)
    return dropped


def default(value: Any, schema: Schema) -> None:
    """Fill in, in place, the defaults of every field left out (a null where
    null is not allowed counts as left out, as in kube)."""
    if isinstance(value, dict):
        properties: dict[str, Schema] = schema.get("properties") or {}
        for name, sub in properties.items():
            if value.get(name) is None and name in value and not sub.get("nullable"):
                del value[name]
            if name not in value and "default" in sub:
                value[name] = copy.deepcopy(sub["default"])
            if name in value:
                default(value[name], sub)
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for name, item in value.items():
                if name not in properties:
                    default(item, extra)
    elif isinstance(value, list) and isinstance(items := schema.get("items"), dict):
        for item in value:
            default(item, items)
