"""Reading gnostic's `openapi.v2.Document` back into the JSON it stands for, so
tests can hold the protobuf /openapi/v2 against the JSON one.

Written independently of the gateway's conversion (which goes the other way), from
gnostic's shapes: Named* lists are objects, an Any is YAML text, x- keys are
vendor_extension, a oneof message is whichever shape it holds. proto3 keeps no
false, zero or empty scalars, so `comparable` drops those from the JSON side too.
"""

from __future__ import annotations

from typing import Any

import yaml
from google.protobuf.message import Message

# The JSON keys whose values gnostic keeps whole, zero values included: as Any
# (YAML), or (security) as messages that are there even when empty.
_KEPT = frozenset({"default", "example", "enum", "examples", "security"})


def _is_map(message: Message) -> bool:
    """Whether message is a JSON object's entries (its one field the Named* list)."""
    fields = message.DESCRIPTOR.fields
    return len(fields) == 1 and fields[0].name == "additional_properties" and fields[0].is_repeated


def _named(entries: Any) -> dict[str, Any]:
    return {
        entry.name: to_json(entry.value) if isinstance(entry.value, Message) else entry.value
        for entry in entries
    }


def to_json(message: Message) -> Any:
    """The JSON value a gnostic message stands for."""
    kind = message.DESCRIPTOR.name
    value: Any = message
    if kind == "Any":
        return yaml.safe_load(value.yaml)
    if kind in ("TypeItem", "StringArray"):
        names = list(value.value)
        return names[0] if kind == "TypeItem" and len(names) == 1 else names
    if kind == "ItemsItem":
        schemas = [to_json(s) for s in value.schema]
        return schemas[0] if len(schemas) == 1 else schemas
    if message.DESCRIPTOR.oneofs:
        chosen = message.WhichOneof("oneof")
        assert chosen is not None, f"an empty {kind}"
        held = getattr(message, chosen)
        return to_json(held) if isinstance(held, Message) else held
    if _is_map(message):
        return _named(value.additional_properties)
    obj: dict[str, Any] = {}
    for field, held in message.ListFields():
        if field.name in ("vendor_extension", "path", "response_code"):
            obj.update(_named(held))
        elif field.message_type is None:
            obj["$ref" if field.name == "_ref" else field.json_name] = (
                list(held) if field.is_repeated else held
            )
        else:
            obj[field.json_name] = (
                [to_json(m) for m in held] if field.is_repeated else to_json(held)
            )
    return obj


def comparable(value: Any, *, verbatim: bool = False) -> Any:
    """value without what proto3 cannot keep: false, zero and empty values
    (except where gnostic keeps them: defaults, examples, enums, x- keys, security)."""
    if verbatim:
        return value
    if isinstance(value, dict):
        return {
            k: comparable(v, verbatim=k in _KEPT or k.startswith("x-"))
            for k, v in value.items()
            if k in _KEPT or k.startswith("x-") or v not in (False, 0, "", [])
        }
    if isinstance(value, list):
        return [comparable(v) for v in value]
    return value
