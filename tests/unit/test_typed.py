"""What kube's Go types make of a built-in kind's JSON (services/registry/generic/typed.py):
nulls as Go takes them, empty maps and lists left out, empty structs kept, and
the first value of the wrong type a 400. Integration tests compare the same
with kube's recorded answers (tests/integration/test_go_round_trip.py)."""

from __future__ import annotations

from typing import Any

import pytest

from services.registry.builtin import kind_schemas
from services.registry.generic import typed
from strata.api.errors import StatusError
from strata.api.schemas import OBJECT_META

Obj = dict[str, Any]


def _with_metadata(schema: Obj) -> Obj:
    return {**schema, "properties": {**schema["properties"], "metadata": OBJECT_META}}


SCHEMA = _with_metadata(kind_schemas.SERVICE)
# A custom resource's: its metadata is Go's ObjectMeta, the rest its own.
CUSTOM: Obj = {"type": "object", "properties": {"metadata": OBJECT_META}}


def test_nulls_are_left_out_or_zero() -> None:
    obj: dict[str, Any] = {
        "metadata": {"name": "s", "finalizers": [None, "a"], "labels": None},
        "spec": {
            "ports": [None, {"port": 80, "name": None}],
            "clusterIP": None,
            "selector": {"a": None, "b": "c"},
        },
    }
    assert typed.decoded(obj, SCHEMA) is None
    assert obj == {
        "metadata": {"name": "s", "finalizers": ["", "a"]},
        "spec": {"ports": [{}, {"port": 80}], "selector": {"a": "", "b": "c"}},
    }


def test_a_null_bytes_value_is_empty_bytes() -> None:
    obj: Obj = {"data": {"k": None}, "binaryData": {"b": None}}
    assert typed.decoded(obj, _with_metadata(kind_schemas.CONFIG_MAP)) is None
    assert obj == {"data": {"k": ""}, "binaryData": {"b": ""}}


def test_empty_maps_and_lists_go_and_empty_structs_stay() -> None:
    container = {"name": "web", "args": [], "ports": [], "resources": {}, "securityContext": {}}
    obj: Obj = {
        "metadata": {"labels": {}, "annotations": {}, "finalizers": [], "ownerReferences": []},
        "spec": {
            "selector": {"matchLabels": {}, "matchExpressions": []},
            "template": {
                "metadata": {"labels": {}},
                "spec": {"containers": [container], "nodeSelector": {}, "tolerations": [{}]},
            },
            "strategy": {},
        },
    }
    assert typed.decoded(obj, _with_metadata(kind_schemas.DEPLOYMENT)) is None
    assert obj == {
        "metadata": {},
        "spec": {
            "selector": {},
            "template": {
                "metadata": {},
                "spec": {
                    "containers": [{"name": "web", "resources": {}, "securityContext": {}}],
                    "tolerations": [{}],
                },
            },
            "strategy": {},
        },
    }


def test_an_empty_managed_fields_stays_for_the_field_manager() -> None:
    """kube's field manager reads `managedFields: []` (a reset) before the
    object is written, so the decoder keeps it; a pod template's goes."""
    obj: Obj = {
        "metadata": {"managedFields": []},
        "spec": {"template": {"metadata": {"managedFields": []}}},
    }
    assert typed.decoded(obj, _with_metadata(kind_schemas.DEPLOYMENT)) is None
    assert obj == {"metadata": {"managedFields": []}, "spec": {"template": {"metadata": {}}}}


def test_a_custom_resource_keeps_its_own_empties() -> None:
    obj: Obj = {
        "metadata": {"labels": {}, "annotations": {"a": None}},
        "spec": {"data": {}, "tags": [], "x": None},
    }
    assert typed.decoded(obj, CUSTOM) is None
    assert obj == {
        "metadata": {"annotations": {"a": ""}},
        "spec": {"data": {}, "tags": [], "x": None},
    }


def test_a_map_keeps_its_empty_values() -> None:
    """Only a struct's fields are left out when empty; a map's entries are not."""
    schema: Obj = {
        "type": "object",
        "properties": {"m": {"type": "object", "additionalProperties": kind_schemas.STRINGS}},
    }
    obj: Obj = {"m": {"a": [], "b": None}}
    assert typed.decoded(obj, schema) is None
    assert obj == {"m": {"a": [], "b": None}}


@pytest.mark.parametrize(
    ("obj", "problem"),
    [
        ({"spec": {"ports": True}}, "spec.ports: expected array, got bool"),
        ({"spec": {"ports": [{"port": "80"}]}}, "spec.ports[0].port: expected integer, got string"),
        ({"metadata": {"name": 5}}, "metadata.name: expected string, got number"),
        (
            {"metadata": {"ownerReferences": [{"uid": []}]}},
            "metadata.ownerReferences[0].uid: expected string, got array",
        ),
        # int-or-string and open parts take anything.
        ({"spec": {"ports": [{"targetPort": "http"}]}, "status": {"x": [1]}}, None),
    ],
)  # fmt: skip
def test_the_first_wrong_type_is_a_400(obj: dict[str, Any], problem: str | None) -> None:
    if problem is None:
        typed.check(obj, SCHEMA, "Service", "v1")
        return
    with pytest.raises(StatusError) as raised:
        typed.check(obj, SCHEMA, "Service", "v1")
    assert (raised.value.code, raised.value.message) == (
        400,
        f'Service in version "v1" cannot be handled as a Service: {problem}',
    )
