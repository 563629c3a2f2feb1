"""Field causes (apimachinery's field.Error) with kube's wording, for every
layer that refuses input with a 422: the registry's strategies and option
checks, and the gateway's request options."""

from __future__ import annotations

import orjson

from strata.api.errors import Cause


def go_value(value: object) -> str:
    """A bad value as field.Error prints it: strings quoted, string lists as Go's
    %#v of a []string, maps and structs as JSON (apimachinery since 1.31),
    anything else as it is."""
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "[]string{" + ", ".join(f'"{v}"' for v in value) + "}"
    if isinstance(value, dict | list):
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    return str(value)


def invalid_value(field: str, value: object, detail: str) -> Cause:
    message = f"Invalid value: {go_value(value)}: {detail}"
    return Cause(reason="FieldValueInvalid", message=message, field=field)


def immutable(field: str, value: object) -> Cause:
    return invalid_value(field, value, "field is immutable")


def required(field: str, detail: str = "") -> Cause:
    message = f"Required value: {detail}" if detail else "Required value"
    return Cause(reason="FieldValueRequired", message=message, field=field)


def duplicate(field: str, value: object) -> Cause:
    return Cause(
        reason="FieldValueDuplicate", message=f"Duplicate value: {go_value(value)}", field=field
    )


def forbidden(field: str, detail: str) -> Cause:
    return Cause(reason="FieldValueForbidden", message=f"Forbidden: {detail}", field=field)


def not_supported(field: str, value: object, supported: tuple[str, ...]) -> Cause:
    listed = ", ".join(f'"{v}"' for v in supported)
    message = f"Unsupported value: {go_value(value)}: supported values: {listed}"
    return Cause(reason="FieldValueNotSupported", message=message, field=field)


def too_long(field: str, limit: int) -> Cause:
    """field.TooLong's wording (the value itself is left out)."""
    message = f"Too long: may not be more than {limit} bytes"
    return Cause(reason="FieldValueTooLong", message=message, field=field)


def type_invalid(field: str, value: object, detail: str) -> Cause:
    """field.TypeInvalid: a value of the wrong type (or format)."""
    message = f"Invalid value: {go_value(value)}: {detail}"
    return Cause(reason="FieldValueTypeInvalid", message=message, field=field)


def too_many(field: str, actual: int, limit: int) -> Cause:
    message = f"Too many: {actual}: must have at most {limit} items"
    return Cause(reason="FieldValueTooMany", message=message, field=field)
