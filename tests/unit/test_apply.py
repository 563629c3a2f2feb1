"""Field ownership (strata.api.managed_fields) and server-side apply's rules
(services/gateway/apply.py): field sets as FieldsV1, what ordinary writes do to
ownership, conflicts with kube's messages, forcing, removing what a manager stops
applying, and applying to nothing (a create)."""

from __future__ import annotations

from typing import Any

import pytest

from services.gateway import apply
from strata.api import managed_fields
from strata.api.errors import StatusError

Obj = dict[str, Any]


def config(**data: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c", "labels": {"app": "web"}},
        "data": dict(data),
    }


def owners(obj: Obj) -> dict[str, set[managed_fields.Path]]:
    return {
        e["manager"]: managed_fields.from_fields_v1(e["fieldsV1"])
        for e in obj["metadata"]["managedFields"]
    }


def test_field_sets_are_fields_v1() -> None:
    fields = managed_fields.leaves({**config(a="1"), "status": {"x": 1}, "spec": {"empty": {}}})
    assert fields == {("data", "a"), ("metadata", "labels", "app"), ("spec", "empty")}
    tree = managed_fields.to_fields_v1(fields)
    assert tree == {
        "f:data": {"f:a": {}},
        "f:metadata": {"f:labels": {"f:app": {}}},
        "f:spec": {"f:empty": {}},
    }
    assert managed_fields.from_fields_v1(tree) == fields
    # What kube writes for Update operations: "." marks a node owned itself,
    # list items own their list here.
    assert managed_fields.from_fields_v1("not a tree") == set()
    assert managed_fields.from_fields_v1({"f:data": "nonsense"}) == {("data",)}
    assert managed_fields.from_fields_v1(
        {"f:data": {".": {}, "f:a": {}}, "f:spec": {"f:ports": {'k:{"port":80}': {}}}}
    ) == {("data",), ("data", "a"), ("spec", "ports")}


def test_applying_to_nothing_creates_with_the_managers_fields() -> None:
    created = apply.apply(None, config(a="1"), manager="k", force=False, api_version="v1")
    assert created["data"] == {"a": "1"} and created["metadata"]["name"] == "c"
    (entry,) = created["metadata"]["managedFields"]
    assert (entry["manager"], entry["operation"], entry["apiVersion"]) == ("k", "Apply", "v1")
    assert entry["fieldsType"] == "FieldsV1"
    assert owners(created) == {"k": {("data", "a"), ("metadata", "labels", "app")}}


def test_a_different_value_on_anothers_field_conflicts_unless_forced() -> None:
    live = apply.apply(None, config(a="1", b="2"), manager="k", force=False, api_version="v1")
    same = apply.apply(live, config(a="1"), manager="o", force=False, api_version="v1")
    assert owners(same)["o"] == {("data", "a"), ("metadata", "labels", "app")}  # shared
    with pytest.raises(StatusError) as raised:
        apply.apply(live, config(a="9", b="8"), manager="o", force=False, api_version="v1")
    error = raised.value
    assert (error.code, error.reason) == (409, "Conflict")
    assert (
        error.message == 'Apply failed with 2 conflicts: conflicts with "k":\n- .data.a\n- .data.b'
    )
    assert error.details["causes"] == [
        {"reason": "FieldManagerConflict", "message": 'conflict with "k"', "field": ".data.a"},
        {"reason": "FieldManagerConflict", "message": 'conflict with "k"', "field": ".data.b"},
    ]
    forced = apply.apply(live, config(a="9"), manager="o", force=True, api_version="v1")
    assert forced["data"] == {"a": "9", "b": "2"}
    assert owners(forced) == {
        "k": {("data", "b"), ("metadata", "labels", "app")},
        "o": {("data", "a"), ("metadata", "labels", "app")},
    }


def test_an_update_manager_is_named_with_its_version_and_time() -> None:
    live = config(a="1")
    live["metadata"]["managedFields"] = [
        {
            "manager": "kubectl-edit",
            "operation": "Update",
            "apiVersion": "v1",
            "time": "2026-01-02T03:04:05Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:data": {".": {}, "f:a": {}}},
        }
    ]
    with pytest.raises(StatusError) as raised:
        apply.apply(live, config(a="2"), manager="k", force=False, api_version="v1")
    assert raised.value.message == (
        'Apply failed with 1 conflict: conflict with "kubectl-edit" using v1 at '
        "2026-01-02T03:04:05Z: .data.a"
    )


def test_fields_left_out_are_removed_unless_someone_else_owns_them() -> None:
    live = apply.apply(None, config(a="1", b="2"), manager="k", force=False, api_version="v1")
    live = apply.apply(live, config(b="2"), manager="o", force=False, api_version="v1")
    dropped = {**config(), "data": {}, "metadata": {"name": "c"}}
    after = apply.apply(live, dropped, manager="k", force=False, api_version="v1")
    # a was k's alone; b and the label are o's too.
    assert after["data"] == {"b": "2"}
    assert after["metadata"]["labels"] == {"app": "web"}
    gone = apply.apply(
        apply.apply(None, config(a="1"), manager="k", force=False, api_version="v1"),
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}},
        manager="k",
        force=False,
        api_version="v1",
    )
    # Maps left empty and owned by nobody go with their last field.
    assert "data" not in gone and "labels" not in gone["metadata"]


@pytest.mark.parametrize(
    ("applied", "message"),
    [
        ([], "the applied configuration must be an object"),
        ({"kind": "ConfigMap", "metadata": {}}, "the applied configuration has no apiVersion"),
        (
            {**config(), "metadata": {"name": "x"}},
            "the name of the object (x) does not match the name on the URL (c)",
        ),
        (
            {**config(), "metadata": {"name": "c", "managedFields": []}},
            "metadata.managedFields must be nil",
        ),
    ],
)
def test_what_cannot_be_applied_is_400(applied: Any, message: str) -> None:
    with pytest.raises(StatusError) as raised:
        apply.check_applied(applied, "c")
    assert (raised.value.code, raised.value.message) == (400, message)


def test_ordinary_writes_take_the_fields_they_set_or_change() -> None:
    created = config(a="1", b="2")
    managed_fields.record_update(None, created, "kubectl-create", "v1")
    (entry,) = created["metadata"]["managedFields"]
    assert (entry["manager"], entry["operation"]) == ("kubectl-create", "Update")
    assert owners(created)["kubectl-create"] == {
        ("data", "a"),
        ("data", "b"),
        ("metadata", "labels", "app"),
    }
    edited = {**created, "data": {"a": "changed"}}  # b removed, a changed
    edited["metadata"] = {k: v for k, v in created["metadata"].items() if k != "managedFields"}
    managed_fields.record_update(created, edited, "kubectl-edit", "v1")
    # Left out, managedFields were the old ones; a is the editor's now, b no one's.
    assert owners(edited) == {
        "kubectl-create": {("metadata", "labels", "app")},
        "kubectl-edit": {("data", "a")},
    }
    # An applier then changing a conflicts with the editor.
    with pytest.raises(StatusError) as raised:
        apply.apply(edited, config(a="1"), manager="k", force=False, api_version="v1")
    assert raised.value.message.startswith(
        'Apply failed with 1 conflict: conflict with "kubectl-edit" using v1 at '
    )
    unchanged = dict(edited)
    managed_fields.record_update(edited, unchanged, "", "v1")
    assert unchanged["metadata"]["managedFields"] == edited["metadata"]["managedFields"]
