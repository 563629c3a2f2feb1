"""/openapi/v2's pieces against kube-apiserver's recorded answers: the JSON
document turned into gnostic's protobuf byte for byte as kube turns it, read
back with protos/gnostic/openapi_v2.proto, a custom resource's schema said in v2
as kube says it, and the Accept negotiation of kube-openapi's handler."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from google.protobuf.message import Message

from services.gateway import negotiation, openapi_proto
from services.gateway.openapi_v2 import v2_schema
from strata.proto.gnostic import openapi_v2_pb2 as gnostic_pb2
from tests.support import gnostic

# kube-apiserver v1.36.2's /openapi/v2, a few entries of each kind, in JSON and
# as the serialized (name, value) pairs of its protobuf answer.
KUBE = json.loads((Path(__file__).parents[1] / "support" / "kube_openapi_v2.json").read_text())
PROTOBUF = negotiation.OPENAPI_V2_PROTOBUF
OLD_PROTOBUF = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
JSON = "application/json"


def _entries(document: gnostic_pb2.Document) -> dict[str, dict[str, Any]]:
    return {
        "paths": {e.name: e for e in document.paths.path},
        "definitions": {e.name: e for e in document.definitions.additional_properties},
        "parameters": {e.name: e for e in document.parameters.additional_properties},
    }


def test_kubes_json_converts_to_the_bytes_kube_serves() -> None:
    converted = _entries(openapi_proto.document(KUBE["json"]))
    for section, recorded in KUBE["protobuf"].items():
        assert set(converted[section]) == set(recorded), section
        for name, encoded in recorded.items():
            assert converted[section][name].SerializeToString() == base64.b64decode(encoded), name


def test_kubes_bytes_read_back_as_kubes_json() -> None:
    pairs: dict[str, type[Message]] = {
        "paths": gnostic_pb2.NamedPathItem,
        "definitions": gnostic_pb2.NamedSchema,
        "parameters": gnostic_pb2.NamedParameter,
    }
    for section, recorded in KUBE["protobuf"].items():
        for name, encoded in recorded.items():
            entry: Any = pairs[section].FromString(base64.b64decode(encoded))
            assert entry.name == name
            expected = gnostic.comparable(KUBE["json"][section][name])
            assert gnostic.to_json(entry.value) == expected, name


def test_every_shape_gnostic_has_reads_back_as_written() -> None:
    doc: dict[str, Any] = {
        "swagger": "2.0",
        "info": {"title": "T", "version": "v1", "x-info": {"a": [1, "", None]}},
        "basePath": "/",
        "schemes": ["https"],
        "x-top": True,
        "securityDefinitions": {
            "token": {"type": "apiKey", "name": "authorization", "in": "header"},
            "oauth": {"type": "oauth2", "flow": "implicit", "authorizationUrl": "u", "scopes": {}},
        },
        "security": [{"token": []}],
        "paths": {
            "x-paths": "yes",
            "/things/{name}": {
                "parameters": [
                    {"$ref": "#/parameters/pretty"},
                    {"name": "name", "in": "path", "required": True, "type": "string"},
                ],
                "get": {
                    "operationId": "readThing",
                    "parameters": [
                        {"name": "h", "in": "header", "type": "integer", "maximum": 3},
                        {"name": "f", "in": "formData", "type": "file"},
                        {"name": "q", "in": "query", "type": "array", "items": {"type": "string"}},
                        {"name": "body", "in": "body", "schema": {"$ref": "#/definitions/Thing"}},
                    ],
                    "responses": {
                        "200": {"description": "OK", "schema": {"$ref": "#/definitions/Thing"}},
                        "204": {"description": "file", "schema": {"type": "file"}},
                        "default": {"$ref": "#/responses/oops"},
                        "x-responses": 1,
                    },
                    "x-kubernetes-action": "get",
                },
            },
        },
        "definitions": {
            "Thing": {
                "type": "object",
                "required": ["spec"],
                "properties": {
                    "spec": {"type": "object", "additionalProperties": True},
                    "data": {"type": "object", "additionalProperties": {"type": "string"}},
                    "tuple": {"type": "array", "items": [{"type": "string"}, {"type": "integer"}]},
                    "either": {"type": ["string", "integer"], "default": 0, "example": ""},
                    "mode": {"type": "string", "enum": ["a", "", "true", "*"]},
                    "empty": {"type": "object", "properties": {}},
                    "all": {"allOf": [{"$ref": "#/definitions/Other"}], "readOnly": True},
                },
                "x-kubernetes-group-version-kind": [
                    {"group": "", "kind": "Thing", "version": "v1"}
                ],
            },
            "Other": {"description": "multi\nline", "minimum": 1.5, "maxLength": 4},
        },
        "parameters": {"pretty": {"name": "pretty", "in": "query", "type": "string"}},
        "responses": {"oops": {"description": "bad", "headers": {"X": {"type": "string"}}}},
    }
    document = gnostic_pb2.Document.FromString(openapi_proto.document(doc).SerializeToString())
    assert gnostic.to_json(document) == gnostic.comparable(doc)
    # Each choice lands where gnostic puts it.
    get = document.paths.path[0].value.get
    assert [p.parameter.non_body_parameter.WhichOneof("oneof") for p in get.parameters[:3]] == [
        "header_parameter_sub_schema",
        "form_data_parameter_sub_schema",
        "query_parameter_sub_schema",
    ]
    assert get.parameters[3].parameter.WhichOneof("oneof") == "body_parameter"
    responses = {r.name: r.value for r in get.responses.response_code}
    assert responses["204"].response.schema.WhichOneof("oneof") == "file_schema"
    assert responses["default"].WhichOneof("oneof") == "json_reference"
    thing = document.definitions.additional_properties[0].value
    # The extension is YAML, as gnostic writes it (kube's bytes: `group: ""`).
    assert thing.vendor_extension[0].value.yaml == '- group: ""\n  kind: Thing\n  version: v1\n'


@pytest.mark.parametrize(
    ("value", "written"),
    [
        # As kube's document carries them (gnostic writes with Go's yaml.v3).
        (
            [{"group": "", "kind": "Pod", "version": "v1"}],
            '- group: ""\n  kind: Pod\n  version: v1\n',
        ),
        (["uid"], "- uid\n"),
        ("*", "'*'\n"),
        ("merge", "merge\n"),
        (True, "true\n"),
        ("true", '"true"\n'),
        ("yes", '"yes"\n'),
        ("a\nb", "|-\n  a\n  b\n"),
    ],
)
def test_any_values_are_yaml_as_gnostic_writes_them(value: Any, written: str) -> None:
    assert openapi_proto.to_yaml(value) == written


def test_a_custom_resource_schema_is_said_in_v2_as_kube_says_it() -> None:
    v3: dict[str, Any] = {
        "type": "object",
        "required": ["size", "note"],
        "properties": {
            "size": {"type": "integer", "minimum": 1, "default": 3},
            "note": {"type": "string", "nullable": True},
            "free": {
                "type": "object",
                "x-kubernetes-preserve-unknown-fields": True,
                "properties": {"a": {"type": "string"}},
            },
            "tags": {
                "type": "array",
                "items": {"type": "string"},
                "x-kubernetes-preserve-unknown-fields": True,
            },
            "mode": {"type": "string", "enum": ["a", "b"]},
            "either": {
                "x-kubernetes-int-or-string": True,
                "anyOf": [{"type": "integer"}, {"type": "string"}],
            },
            "one": {
                "type": "object",
                "oneOf": [{"required": ["p"]}, {"required": ["q"]}],
                "properties": {"p": {"type": "string"}, "q": {"type": "string"}},
            },
        },
    }
    # kube-apiserver's /openapi/v2 definition of a CRD with this spec schema.
    kube = {
        "type": "object",
        "required": ["size"],
        "properties": {
            "either": {"x-kubernetes-int-or-string": True},
            "free": {"x-kubernetes-preserve-unknown-fields": True},
            "mode": {"type": "string", "enum": ["a", "b"]},
            "note": {},
            "one": {
                "type": "object",
                "properties": {"p": {"type": "string"}, "q": {"type": "string"}},
            },
            "size": {"type": "integer", "minimum": 1},
            "tags": {"x-kubernetes-preserve-unknown-fields": True},
        },
    }
    assert v2_schema(v3) == kube


@pytest.mark.parametrize(
    ("accept", "written"),
    [
        # kube-apiserver v1.36.2's answers to GET /openapi/v2 with this Accept.
        (OLD_PROTOBUF, PROTOBUF),
        (PROTOBUF, PROTOBUF),
        ("", JSON),
        ("*/*", JSON),
        ("application/*", JSON),
        (f"{JSON}, {OLD_PROTOBUF}", JSON),
        (f"{OLD_PROTOBUF}, {JSON}", PROTOBUF),
        (f"{JSON};q=0.5, {OLD_PROTOBUF}", PROTOBUF),
        (f"{OLD_PROTOBUF};q=0.5, {JSON}", JSON),
        (f"application/yaml, {OLD_PROTOBUF};q=0.9", PROTOBUF),
        ("text/html, */*;q=0.1", JSON),
        (f"{JSON};q=0", JSON),
        (f"{JSON};foo=bar", JSON),
        ("application/yaml", None),
        ("application/com.github.proto-openapi.spec.v2@v2.0+protobuf", None),
        ("APPLICATION/JSON", None),
    ],
)
def test_openapi_v2_negotiates_as_kube(accept: str, written: str | None) -> None:
    assert negotiation.openapi_v2(accept) == written
