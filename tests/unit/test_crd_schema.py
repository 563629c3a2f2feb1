"""Custom resource schemas without a server: validation causes with kube's
paths and messages, pruning, defaulting, the structural checks a CRD's schema
must pass, and the JSONPath of printer columns."""

from __future__ import annotations

from typing import Any

import pytest

from services.registry.extensions import jsonpath
from services.registry.extensions.schema_structure import schema_causes
from services.registry.generic.schema import default, prune, validate

Obj = dict[str, Any]

SCHEMA: Obj = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "required": ["color"],
            "properties": {
                "color": {"type": "string", "enum": ["red", "green"]},
                "replicas": {"type": "integer", "minimum": 0, "maximum": 10, "default": 1},
                "ratio": {"type": "number", "exclusiveMaximum": True, "maximum": 1},
                "name": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 5, "minLength": 2},
                "when": {"type": "string", "format": "date-time"},
                "email": {"type": "string", "format": "email"},
                "ip": {"type": "string", "format": "ipv4"},
                "port": {"x-kubernetes-int-or-string": True},
                "note": {"type": "string", "nullable": True},
                "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "nested": {
                    "type": "object",
                    "default": {},
                    "properties": {"level": {"type": "string", "default": "info"}},
                },
            },
        },
    },
}


def causes(spec: Obj) -> list[tuple[str, str, str]]:
    obj = {"apiVersion": "example.com/v1", "kind": "W", "metadata": {"name": "w"}, "spec": spec}
    return [(c.reason, c.field, c.message) for c in validate(obj, SCHEMA)]


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        pytest.param({"color": "red"}, [], id="valid"),
        pytest.param({}, [("FieldValueRequired", "spec.color", "Required value")], id="required"),
        pytest.param(
            {"color": "blue"},
            [
                (
                    "FieldValueNotSupported",
                    "spec.color",
                    'Unsupported value: "blue": supported values: "red", "green"',
                )
            ],
            id="enum",
        ),
        pytest.param(
            {"color": "red", "replicas": "3"},
            [
                (
                    "FieldValueTypeInvalid",
                    "spec.replicas",
                    'Invalid value: "string": spec.replicas in body must be of type integer: '
                    '"string"',
                )
            ],
            id="type",
        ),
        pytest.param(
            {"color": "red", "replicas": -1},
            [
                (
                    "FieldValueInvalid",
                    "spec.replicas",
                    "Invalid value: -1: spec.replicas in body should be greater than or equal to 0",
                )
            ],
            id="minimum",
        ),
        pytest.param(
            {"color": "red", "replicas": 11},
            [
                (
                    "FieldValueInvalid",
                    "spec.replicas",
                    "Invalid value: 11: spec.replicas in body should be less than or equal to 10",
                )
            ],
            id="maximum",
        ),
        pytest.param(
            {"color": "red", "ratio": 1},
            [
                (
                    "FieldValueInvalid",
                    "spec.ratio",
                    "Invalid value: 1: spec.ratio in body should be less than 1",
                )
            ],
            id="exclusive-maximum",
        ),
        pytest.param(
            {"color": "red", "name": "A1"},
            [
                (
                    "FieldValueInvalid",
                    "spec.name",
                    "Invalid value: \"A1\": spec.name in body should match '^[a-z]+$'",
                )
            ],
            id="pattern",
        ),
        pytest.param(
            {"color": "red", "name": "abcdef"},
            [("FieldValueTooLong", "spec.name", "Too long: may not be more than 5 bytes")],
            id="max-length",
        ),
        pytest.param(
            {"color": "red", "name": "a"},
            [
                (
                    "FieldValueInvalid",
                    "spec.name",
                    'Invalid value: "a": spec.name in body should be at least 2 chars long',
                )
            ],
            id="min-length",
        ),
        pytest.param(
            {"color": "red", "when": "yesterday"},
            [
                (
                    "FieldValueTypeInvalid",
                    "spec.when",
                    'Invalid value: "yesterday": spec.when in body must be of type date-time: '
                    '"yesterday"',
                )
            ],
            id="format-date-time",
        ),
        pytest.param({"color": "red", "when": "2024-01-02T03:04:05Z"}, [], id="date-time"),
        pytest.param(
            {"color": "red", "email": "nobody"},
            [
                (
                    "FieldValueTypeInvalid",
                    "spec.email",
                    'Invalid value: "nobody": spec.email in body must be of type email: "nobody"',
                )
            ],
            id="format-email",
        ),
        pytest.param(
            {"color": "red", "ip": "10.0.0.300"},
            [
                (
                    "FieldValueTypeInvalid",
                    "spec.ip",
                    'Invalid value: "10.0.0.300": spec.ip in body must be of type ipv4: '
                    '"10.0.0.300"',
                )
            ],
            id="format-ipv4",
        ),
        pytest.param({"color": "red", "port": 80}, [], id="int-or-string-int"),
        pytest.param({"color": "red", "port": "http"}, [], id="int-or-string-string"),
        pytest.param(
            {"color": "red", "port": True},
            [
                (
                    "FieldValueTypeInvalid",
                    "spec.port",
                    'Invalid value: "boolean": spec.port in body must be of type integer,string: '
                    '"boolean"',
                )
            ],
            id="int-or-string-bool",
        ),
        pytest.param({"color": "red", "note": None}, [], id="nullable"),
        pytest.param(
            {"color": "red", "name": None},
            [
                (
                    "FieldValueTypeInvalid",
                    "spec.name",
                    'Invalid value: "null": spec.name in body must be of type string: "null"',
                )
            ],
            id="null-not-nullable",
        ),
        pytest.param(
            {"color": "red", "tags": ["a", 1]},
            [
                (
                    "FieldValueTypeInvalid",
                    "spec.tags[1]",
                    'Invalid value: "integer": spec.tags[1] in body must be of type string: '
                    '"integer"',
                )
            ],
            id="array-item",
        ),
        pytest.param(
            {"color": "red", "tags": ["a", "b", "c"]},
            [("FieldValueTooMany", "spec.tags", "Too many: 3: must have at most 2 items")],
            id="max-items",
        ),
        pytest.param(
            {"color": "red", "labels": {"a": 1}},
            [
                (
                    "FieldValueTypeInvalid",
                    "spec.labels.a",
                    'Invalid value: "integer": spec.labels.a in body must be of type string: '
                    '"integer"',
                )
            ],
            id="additional-properties",
        ),
        pytest.param({"color": "red", "free": {"anything": [1, {"x": None}]}}, [], id="preserve"),
    ],
)
def test_validation_causes(spec: Obj, expected: list[tuple[str, str, str]]) -> None:
    assert sorted(causes(spec)) == sorted(expected)


def test_pruning_drops_unknown_fields_and_keeps_preserved_ones() -> None:
    obj = {
        "apiVersion": "example.com/v1",
        "kind": "W",
        "metadata": {"name": "w"},
        "extra": 1,
        "spec": {
            "color": "red",
            "unknown": {"deep": True},
            "free": {"kept": {"deep": 1}},
            "labels": {"any": "key"},
            "tags": ["a"],
        },
    }
    dropped = prune(obj, SCHEMA)
    assert sorted(dropped) == ["extra", "spec.unknown"]
    assert obj == {
        "apiVersion": "example.com/v1",
        "kind": "W",
        "metadata": {"name": "w"},
        "spec": {
            "color": "red",
            "free": {"kept": {"deep": 1}},
            "labels": {"any": "key"},
            "tags": ["a"],
        },
    }


def test_defaults_fill_what_was_left_out_and_nulls_that_may_not_be_null() -> None:
    obj: Obj = {"spec": {"color": "red", "replicas": None, "note": None}}
    default(obj, SCHEMA)
    assert obj["spec"] == {
        "color": "red",
        "replicas": 1,
        "note": None,
        "nested": {"level": "info"},
    }
    given: Obj = {"spec": {"replicas": 4, "nested": {"level": "debug"}}}
    default(given, SCHEMA)
    assert given["spec"] == {"replicas": 4, "nested": {"level": "debug"}}


AT = "spec.versions[0].schema.openAPIV3Schema"


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        pytest.param(SCHEMA, [], id="structural"),
        pytest.param(
            {"properties": {}},
            [("FieldValueRequired", f"{AT}.type", "Required value: must not be empty at the root")],
            id="root-type-required",
        ),
        pytest.param(
            {"type": "string"},
            [
                (
                    "FieldValueInvalid",
                    f"{AT}.type",
                    'Invalid value: "string": must be object at the root',
                )
            ],
            id="root-not-object",
        ),
        pytest.param(
            {"type": "object", "properties": {"spec": {"properties": {}}}},
            [
                (
                    "FieldValueRequired",
                    f"{AT}.properties[spec].type",
                    "Required value: must not be empty for specified object fields",
                )
            ],
            id="field-type-required",
        ),
        pytest.param(
            {"type": "object", "properties": {"list": {"type": "array"}}},
            [
                (
                    "FieldValueRequired",
                    f"{AT}.properties[list].items",
                    "Required value: must be specified",
                )
            ],
            id="array-items-required",
        ),
        pytest.param(
            {"type": "object", "properties": {"x": {"type": "text"}}},
            [
                (
                    "FieldValueNotSupported",
                    f"{AT}.properties[x].type",
                    'Unsupported value: "text": supported values: "array", "boolean", "integer", '
                    '"number", "object", "string"',
                )
            ],
            id="unknown-type",
        ),
        pytest.param(
            {
                "type": "object",
                "properties": {
                    "m": {
                        "type": "object",
                        "properties": {"a": {"type": "string"}},
                        "additionalProperties": {"type": "string"},
                    }
                },
            },
            [
                (
                    "FieldValueForbidden",
                    f"{AT}.properties[m].additionalProperties",
                    "Forbidden: additionalProperties and properties are mutual exclusive",
                )
            ],
            id="properties-and-additional-properties",
        ),
        pytest.param(
            {"type": "object", "properties": {"n": {"type": "integer", "default": "one"}}},
            [
                (
                    "FieldValueTypeInvalid",
                    f"{AT}.properties[n].default",
                    f'Invalid value: "string": {AT}.properties[n].default in body must be of type '
                    'integer: "string"',
                )
            ],
            id="default-of-the-wrong-type",
        ),
        pytest.param(
            {
                "type": "object",
                "properties": {
                    "metadata": {"type": "object", "properties": {"labels": {"type": "object"}}}
                },
            },
            [
                (
                    "FieldValueForbidden",
                    f"{AT}.properties[metadata]",
                    "Forbidden: must not specify anything other than name and generateName, but "
                    "metadata is implicitly specified",
                )
            ],
            id="metadata-restricted",
        ),
        pytest.param(
            {"type": "object", "properties": {"x": {"type": "string", "pattern": "("}}},
            [
                (
                    "FieldValueInvalid",
                    f"{AT}.properties[x].pattern",
                    'Invalid value: "(": must be a valid regular expression, but isn\'t: '
                    "error parsing regexp: missing closing ): `(`",
                )
            ],
            id="bad-pattern",
        ),
        pytest.param(
            {"type": "object", "properties": {"x": {"anyOf": [{"type": "string"}]}}},
            [
                (
                    "FieldValueRequired",
                    f"{AT}.properties[x].type",
                    "Required value: must not be empty for specified object fields",
                ),
                (
                    "FieldValueForbidden",
                    f"{AT}.properties[x].anyOf[0].type",
                    "Forbidden: must be empty to be structural",
                ),
            ],
            id="type-in-a-junctor",
        ),
    ],
)
def test_structural_schema_causes(schema: Obj, expected: list[tuple[str, str, str]]) -> None:
    got = [(c.reason, c.field, c.message) for c in schema_causes(schema, AT)]
    assert sorted(got) == sorted(expected)


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (".spec.replicas", [3]),
        (".spec.missing", []),
        (".status.conditions[0].type", ["Ready"]),
        (".status.conditions[*].status", ["True", "False"]),
        ('.status.conditions[?(@.type=="Synced")].status', ["False"]),
        (".metadata.labels['app.kubernetes.io/name']", ["demo"]),
        ("{.spec.replicas}", [3]),
    ],
)
def test_printer_column_json_paths(path: str, expected: list[Any]) -> None:
    obj = {
        "metadata": {"labels": {"app.kubernetes.io/name": "demo"}},
        "spec": {"replicas": 3},
        "status": {
            "conditions": [
                {"type": "Ready", "status": "True"},
                {"type": "Synced", "status": "False"},
            ]
        },
    }
    assert jsonpath.find(obj, jsonpath.parse(path)) == expected


@pytest.mark.parametrize("path", ["spec.replicas", ".spec[", ".spec..x"])
def test_json_paths_not_understood_are_refused(path: str) -> None:
    with pytest.raises(jsonpath.JSONPathError):
        jsonpath.parse(path)
