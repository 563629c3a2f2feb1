"""Server-side apply's merge, removal and ownership rules
(services/registry/generic/patching/apply.py) against kube's recorded answers
to the same apply sequences (tests/support/apply_cases.py): each step's
managedFields (fieldsV1 sets, in kube's order, with a clock that stands still)
and conflicts, and for ConfigMaps and custom resources the object itself.
Between steps the object goes through what kube's Go types make of it
(go_encoded), as kube's live object does: the registry's part of a write,
emulated here so that apply's own part is what is tested."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from services.registry.builtin.kind_schemas import CONFIG_MAP, DEPLOYMENT
from services.registry.generic.patching import apply
from strata.api import managed_fields
from strata.api.errors import StatusError
from strata.api.schemas import OBJECT_META
from tests.support.apply_cases import CASES, CONFIGMAPS, WIDGET_CRD, WIDGETS, Case, recorded

Obj = dict[str, Any]
KUBE = recorded()
NOW = "2026-01-02T03:04:05Z"
_ZERO = {"string": "", "integer": 0, "number": 0, "boolean": False}


def _with_atomic_selector(schema: Obj) -> Obj:
    """DEPLOYMENT as kube's schema has it: a LabelSelector is an atomic map
    (services/registry/builtin/kind_schemas.py does not say so yet)."""
    schema = copy.deepcopy(schema)
    schema["properties"]["spec"]["properties"]["selector"]["x-kubernetes-map-type"] = "atomic"
    return schema


SCHEMAS = {
    "ConfigMap": CONFIG_MAP,
    "Deployment": _with_atomic_selector(DEPLOYMENT),
    "Widget": WIDGET_CRD["spec"]["versions"][0]["schema"]["openAPIV3Schema"],
}


def go_encoded(value: Any, schema: Obj | None) -> Any:
    """What kube's Go types make of a value: a null struct field is left out, a
    null map value is its type's zero, and empty maps and lists are left out
    (omitempty); a struct stays, empty or not."""
    schema = schema or {}
    if isinstance(value, list):
        return [go_encoded(item, schema.get("items")) for item in value]
    if not isinstance(value, dict):
        return value
    properties = schema.get("properties")
    values = schema.get("additionalProperties")
    if properties is None and isinstance(values, dict):
        zero = _ZERO.get(values.get("type", ""))
        return {k: zero if v is None else go_encoded(v, values) for k, v in value.items()}
    encoded: Obj = {}
    for name, child in value.items():
        child_schema = (properties or {}).get(name)
        if child_schema is None:  # what the schema does not describe stays as it is
            encoded[name] = child
            continue
        if child is None:
            continue
        child = go_encoded(child, child_schema)
        is_map = isinstance(child, dict) and "properties" not in (child_schema or {})
        if (is_map or isinstance(child, list)) and not child:
            continue
        encoded[name] = child
    return encoded


def _answers(case: Case, name: str) -> list[Obj | None]:
    """What apply answers to each step (None where kube's registry refused the
    result: its validation, not apply's rules)."""
    schema = SCHEMAS[case.steps[0][1]["kind"]]
    schema = {**schema, "properties": {**schema["properties"], "metadata": OBJECT_META}}
    shapes = managed_fields.list_shapes(schema)
    live: Obj | None = None
    answers: list[Obj | None] = []
    for (who, configuration), expected in zip(case.steps, KUBE[name], strict=True):
        manager, _, force = who.partition(":")
        try:
            merged = apply.apply(
                live,
                configuration,
                manager=manager,
                force=bool(force),
                api_version=configuration["apiVersion"],
                shapes=shapes,
            )
        except StatusError as e:
            answers.append({"code": e.code, "message": e.message})
            continue
        if expected["code"] not in (200, 201):
            answers.append(None)
            continue
        code = 201 if live is None else 200
        # A custom resource is kept as it is applied: it has no Go types.
        live = merged if case.collection == WIDGETS else go_encoded(merged, schema)
        managed = live["metadata"].get("managedFields") or []
        answer: Obj = {
            "code": code,
            "managedFields": [
                [e["manager"], e["operation"], "time" in e, e["fieldsV1"]] for e in managed
            ],
        }
        if case.collection in (CONFIGMAPS, WIDGETS):
            answer["object"] = {".".join(p): managed_fields_at(live, p) for p in case.view}
        answers.append(answer)
    return answers


def managed_fields_at(obj: Obj, path: tuple[str, ...]) -> Any:
    value: Any = obj
    for name in path:
        if not isinstance(value, dict) or name not in value:
            return "<absent>"
        value = value[name]
    return value


@pytest.mark.parametrize("name", sorted(CASES))
def test_apply_sequence_matches_kube(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # One second for every step, as kube's own run had: managedFields' order
    # is then kube's order by operation, time and manager.
    monkeypatch.setattr(managed_fields, "now_rfc3339", lambda: NOW)
    for step, (got, expected) in enumerate(
        zip(_answers(CASES[name], name), KUBE[name], strict=True)
    ):
        if got is None:
            assert expected["code"] == 422  # the registry's validation
            continue
        wanted = {k: v for k, v in expected.items() if k in got}
        assert (step, got) == (step, wanted)


def test_the_issues_sequence_keeps_the_last_applied_data() -> None:
    """Issue 27 item 10: {k1}, then {}, then {k2} left data absent while
    managedFields claimed f:data.f:k2."""
    steps = [{"k1": "v1"}, {}, {"k2": "v2"}]
    live: Obj | None = None
    for data in steps:
        configuration = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
        merged = apply.apply(
            live, {**configuration, "data": data}, manager="a", force=False, api_version="v1"
        )
        live = go_encoded(merged, CONFIG_MAP)
    assert live is not None
    assert live["data"] == {"k2": "v2"}
    (entry,) = live["metadata"]["managedFields"]
    assert entry["fieldsV1"] == {"f:data": {"f:k2": {}}}


def test_managed_fields_are_in_kubes_order() -> None:
    """What kube answered to: a applies, b applies the same (no change, so no
    time), a changes a key a second later, c applies a second after that."""
    entries = [
        {"manager": "c", "operation": "Apply", "time": "2026-11-25T14:11:26Z"},
        {"manager": "kubectl-edit", "operation": "Update", "time": "2026-11-25T14:11:20Z"},
        {"manager": "a", "operation": "Apply", "time": "2026-11-25T14:11:25Z"},
        {"manager": "b", "operation": "Apply"},
    ]
    ordered = managed_fields.in_kubes_order(entries)
    assert [e["manager"] for e in ordered] == ["b", "a", "c", "kubectl-edit"]


def test_an_apply_that_changes_nothing_keeps_the_time() -> None:
    configuration = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
    first = apply.apply(
        None, {**configuration, "data": {"k1": "v1"}}, manager="a", force=False, api_version="v1"
    )
    (entry,) = first["metadata"]["managedFields"]
    entry["time"] = "2020-01-01T00:00:00Z"
    # b applies what is there: a new entry, with no time; a keeps its own.
    second = apply.apply(
        first, {**configuration, "data": {"k1": "v1"}}, manager="b", force=False, api_version="v1"
    )
    assert [(e["manager"], e.get("time")) for e in second["metadata"]["managedFields"]] == [
        ("b", None),
        ("a", "2020-01-01T00:00:00Z"),
    ]
    # a adds a key: the object changes, a's entry gets the time.
    third = apply.apply(
        second,
        {**configuration, "data": {"k1": "v1", "k2": "v2"}},
        manager="a",
        force=False,
        api_version="v1",
    )
    times = {e["manager"]: e.get("time") for e in third["metadata"]["managedFields"]}
    assert times["b"] is None and times["a"] not in (None, "2020-01-01T00:00:00Z")
