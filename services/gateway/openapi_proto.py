"""The OpenAPI v2 document as gnostic's protobuf `openapi.v2.Document`.

kubectl asks /openapi/v2 for "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
alone (no JSON fallback) before it validates a `kind: List` or a kind the server
does not serve, so without these bytes it refuses both. kube-apiserver makes
them as kube-openapi does: the JSON document read into gnostic's compiler
(`openapi_v2.NewDocument`); this module does the same walk over the JSON
document, driven by the message descriptors, so every field lands under its
published number. Where a JSON value has no fixed shape gnostic keeps it as YAML
text (an `Any`), and each choice of shapes is a message with a oneof; the
choices below follow gnostic's rules for picking one.
"""

from __future__ import annotations

import functools
from typing import Any, cast

import orjson
import yaml
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from strata.proto.gnostic import openapi_v2_pb2 as gnostic

Doc = dict[str, Any]
# Messages that are a JSON object's entries, each a Named* (name, value) pair.
_MAPS = frozenset(
    {
        "Default",
        "Definitions",
        "Examples",
        "Headers",
        "Oauth2Scopes",
        "ParameterDefinitions",
        "Properties",
        "ResponseDefinitions",
        "SecurityDefinitions",
        "SecurityRequirement",
        "VendorExtension",
    }
)
# A non-body parameter's message, by where the parameter goes ("in").
_NON_BODY = {
    "header": "header_parameter_sub_schema",
    "formData": "form_data_parameter_sub_schema",
    "query": "query_parameter_sub_schema",
    "path": "path_parameter_sub_schema",
}
# A security scheme's message, by its type (and an OAuth2 scheme's flow).
_SECURITY = {
    ("basic", ""): "basic_authentication_security",
    ("apiKey", ""): "api_key_security",
    ("oauth2", "implicit"): "oauth2_implicit_security",
    ("oauth2", "password"): "oauth2_password_security",
    ("oauth2", "application"): "oauth2_application_security",
    ("oauth2", "accessCode"): "oauth2_access_code_security",
}


# The tags a plain string could read back as, for which yaml.v3 quotes it.
_NOT_STRINGS = frozenset(
    f"tag:yaml.org,2002:{t}" for t in ("null", "bool", "int", "float", "timestamp")
)
# YAML 1.1's booleans, which yaml.v3 also quotes.
_OLD_BOOLS = frozenset(
    spelling
    for word in ("y", "yes", "on", "n", "no", "off")
    for spelling in (word, word.capitalize(), word.upper())
)


class _GoYaml(yaml.SafeDumper):
    """YAML written as Go's yaml.v3 (which gnostic uses) writes it: a string
    that would read back as something else ("", "true") in double quotes, one
    that only cannot be plain ("*") in single quotes, several lines as a block.
    (Indentation stays PyYAML's: the same values, not always the same bytes.)"""

    def choose_scalar_style(self) -> str:
        event: Any = self.event
        if not event.style and isinstance(event, yaml.ScalarEvent):
            if event.value in _OLD_BOOLS and event.tag == "tag:yaml.org,2002:str":
                return '"'
            if not event.implicit[0]:
                tag = self.resolve(  # type: ignore[no-untyped-call]
                    yaml.ScalarNode, event.value, (True, False)
                )
                if tag in _NOT_STRINGS:
                    return '"'
        style: str = super().choose_scalar_style()
        return style


def _string(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_GoYaml.add_representer(str, _string)


def to_yaml(value: Any) -> str:
    """value as gnostic's Any carries it: the YAML text of the JSON value."""
    # A document repeats the same few values (each operation's kind, list
    # types); PyYAML's Python emitter is what the conversion spends most on.
    return _yaml_text(orjson.dumps(value))


@functools.lru_cache(maxsize=4096)
def _yaml_text(value: bytes) -> str:
    text: str = yaml.dump(
        orjson.loads(value),
        Dumper=_GoYaml,
        default_flow_style=False,
        sort_keys=False,
        allow_unicode=True,
        width=2**31,
    )
    # A lone scalar comes out with an end-of-document marker gnostic does not write.
    return text.removesuffix("...\n")


def _fields(message: Message) -> dict[str, FieldDescriptor]:
    """A message's fields by the JSON key they hold ("$ref" for _ref)."""
    fields = cast(list[FieldDescriptor], message.DESCRIPTOR.fields)
    return {("$ref" if f.name == "_ref" else f.json_name): f for f in fields}


def _field(message: Message, name: str) -> FieldDescriptor:
    return cast(FieldDescriptor, message.DESCRIPTOR.fields_by_name[name])


def _expect_object(value: Any) -> None:
    if not isinstance(value, dict):
        raise TypeError(f"expected a JSON object, not {value!r}")


def _choice(message: Message, value: Any) -> str:
    """Which field of a oneof message value goes in, as gnostic chooses it."""
    kind = message.DESCRIPTOR.name
    if kind == "AdditionalPropertiesItem":
        return "boolean" if isinstance(value, bool) else "schema"
    _expect_object(value)
    if kind in ("ParametersItem", "ResponseValue"):
        if "$ref" in value:
            return "json_reference"
        return "parameter" if kind == "ParametersItem" else "response"
    if kind == "Parameter":
        return "body_parameter" if value.get("in") == "body" else "non_body_parameter"
    if kind == "NonBodyParameter":
        return _NON_BODY.get(value.get("in", ""), "query_parameter_sub_schema")
    if kind == "SchemaItem":
        return "file_schema" if value.get("type") == "file" else "schema"
    flow = value.get("flow", "") if value.get("type") == "oauth2" else ""
    return _SECURITY.get((value.get("type", ""), flow), "basic_authentication_security")


def _into(message: Message, value: Any) -> None:
    """Fill message with value, the JSON that the message stands for."""
    descriptor = message.DESCRIPTOR
    kind = descriptor.name
    message.SetInParent()
    # The branches below name fields of particular messages, which the Message
    # type does not know: reach them through an untyped name.
    fields: Any = message
    if kind == "Any":
        fields.yaml = to_yaml(value)
    elif kind in ("TypeItem", "StringArray"):
        fields.value.extend([value] if isinstance(value, str) else value)
    elif kind == "ItemsItem":
        for schema in [value] if isinstance(value, dict) else value:
            _into(fields.schema.add(), schema)
    elif descriptor.oneofs:
        _set(message, _field(message, _choice(message, value)), value)
    elif kind in _MAPS:
        _expect_object(value)
        entries = fields.additional_properties
        for name, item in value.items():
            named = entries.add(name=name)
            _set(named, _field(named, "value"), item)
    else:
        _object(message, value)


def _object(message: Message, value: Doc) -> None:
    """A JSON object's keys into message's fields: x- keys into its
    vendor_extension, a path's and a response code's into their lists."""
    _expect_object(value)
    fields = _fields(message)
    kind = message.DESCRIPTOR.name
    lists: Any = message  # vendor_extension, path, response_code: see _into
    for key, item in value.items():
        if key.startswith("x-") and "vendorExtension" in fields:
            _into(lists.vendor_extension.add(name=key).value, item)
        elif kind == "Paths" and key.startswith("/"):
            _into(lists.path.add(name=key).value, item)
        elif kind == "Responses":
            _into(lists.response_code.add(name=key).value, item)
        elif (field := fields.get(key)) is not None:
            try:
                _set(message, field, item)
            except (TypeError, ValueError):
                # A value of the wrong shape for its field (gnostic refuses the
                # document); leaving it out keeps the rest readable.
                message.ClearField(field.name)
        # Anything else has no place in a v2 document; gnostic refuses it, and
        # the JSON document strata serves has none (openapi_v2 leaves them out).


def _set(message: Message, field: FieldDescriptor, value: Any) -> None:
    if field.is_repeated:
        target = getattr(message, field.name)
        for item in value:
            if field.type == FieldDescriptor.TYPE_MESSAGE:
                _into(target.add(), item)
            else:
                target.append(item)
    elif field.type == FieldDescriptor.TYPE_MESSAGE:
        _into(getattr(message, field.name), value)
    elif field.type == FieldDescriptor.TYPE_DOUBLE:
        setattr(message, field.name, float(value))
    else:
        setattr(message, field.name, value)


def document(swagger: Doc) -> gnostic.Document:
    """The gnostic message of a Swagger 2.0 document."""
    message = gnostic.Document()
    _into(message, swagger)
    return message
