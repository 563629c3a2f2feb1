"""Field causes (apimachinery's field.Error) with kube's wording, for every
layer that refuses input with a 422: the registry's strategies and option
checks, and the gateway's request options."""

from __future__ import annotations

import orjson

from strata.api import gomarshal
from strata.api.errors import Cause
from strata.api.goquote import quote


def go_value(value: object) -> str:
    """A value as Go's %#v prints it in a message of kube's own (a string quoted,
    a []string as Go syntax, maps as JSON)."""
    if isinstance(value, str):
        return quote(value)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "[]string{" + ", ".join(quote(v) for v in value) + "}"
    if isinstance(value, dict | list):
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    return str(value)


def bad_value(value: object, *, named: bool = False) -> str:
    """A bad value as field.Error's message prints it (apimachinery since 1.31):
    a string as %q, or as JSON when its Go type is a named string type (kube's
    enums: ServiceType, Protocol...; named); numbers and booleans as they are;
    None as null; lists and maps as Go's json.Marshal writes them."""
    if isinstance(value, str):
        return gomarshal.marshal(value) if named else quote(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, int | float):
        return str(value)
    return gomarshal.marshal(value)


def invalid_value(field: str, value: object, detail: str) -> Cause:
    message = f"Invalid value: {bad_value(value)}: {detail}"
    return Cause(reason="FieldValueInvalid", message=message, field=field)


def immutable(field: str, value: object) -> Cause:
    return invalid_value(field, value, "field is immutable")


def required(field: str, detail: str = "") -> Cause:
    message = f"Required value: {detail}" if detail else "Required value"
    return Cause(reason="FieldValueRequired", message=message, field=field)


def duplicate(field: str, value: object) -> Cause:
    return Cause(
        reason="FieldValueDuplicate", message=f"Duplicate value: {bad_value(value)}", field=field
    )


def forbidden(field: str, detail: str) -> Cause:
    return Cause(reason="FieldValueForbidden", message=f"Forbidden: {detail}", field=field)


def not_supported(field: str, value: object, supported: tuple[str, ...]) -> Cause:
    """field.NotSupported: the value, then every supported one strconv.Quote'd.
    The values kube checks this way are nearly all of enum types (named string
    types), whose bad value its message writes as JSON."""
    listed = ", ".join(quote(v) for v in supported)
    message = f"Unsupported value: {bad_value(value, named=True)}: supported values: {listed}"
    return Cause(reason="FieldValueNotSupported", message=message, field=field)


def too_long(field: str, limit: int) -> Cause:
    """field.TooLong's wording (the value itself is left out)."""
    message = f"Too long: may not be more than {limit} bytes"
    return Cause(reason="FieldValueTooLong", message=message, field=field)


def type_invalid(field: str, value: object, detail: str) -> Cause:
    """field.TypeInvalid: a value of the wrong type (or format)."""
    message = f"Invalid value: {bad_value(value)}: {detail}"
    return Cause(reason="FieldValueTypeInvalid", message=message, field=field)


def too_many(field: str, actual: int, limit: int) -> Cause:
    message = f"Too many: {actual}: must have at most {limit} items"
    return Cause(reason="FieldValueTooMany", message=message, field=field)
