"""Field ownership (strata.api.managed_fields) and server-side apply's rules
(services/registry/generic/patching/apply.py): field sets as FieldsV1, what ordinary writes do to
ownership, conflicts with kube's messages, forcing, removing what a manager stops
applying, and applying to nothing (a create)."""

from __future__ import annotations

from typing import Any

import pytest

from services.registry.builtin.kind_schemas import DEPLOYMENT
from services.registry.generic.patching import apply
from strata.api import managed_fields
from strata.api.errors import StatusError
from strata.api.managed_fields import Key, Value

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
        {
            "f:data": {".": {}, "f:a": {}},
            "f:spec": {"f:ports": {'k:{"port":80}': {}}, "f:args": {"i:0": {}}},
            "f:metadata": {"f:finalizers": {'v:"x"': {}}},
        }
    ) == {
        ("data",),
        ("data", "a"),
        ("spec", "ports", Key((("port", 80),))),
        ("spec", "args"),  # an item by index: its (atomic) list is owned
        ("metadata", "finalizers", Value("x")),
    }


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


SHAPES = managed_fields.list_shapes(DEPLOYMENT)
CONTAINERS = ("spec", "template", "spec", "containers")


def deployment(*containers: Obj, finalizers: tuple[str, ...] = ()) -> Obj:
    obj: Obj = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}}
    if containers:
        obj["spec"] = {"template": {"spec": {"containers": list(containers)}}}
    if finalizers:
        obj["metadata"]["finalizers"] = list(finalizers)
    return obj


def applied(live: Obj | None, config: Obj, manager: str, *, force: bool = False) -> Obj:
    return apply.apply(
        live, config, manager=manager, force=force, api_version="apps/v1", shapes=SHAPES
    )


def by_name(name: str) -> Key:
    return Key((("name", name),))


def test_map_lists_merge_item_by_item_and_own_each_item() -> None:
    live = applied(None, deployment({"name": "web", "image": "nginx"}), "a")
    live = applied(live, deployment({"name": "log", "image": "fluentd"}), "b")
    containers = live["spec"]["template"]["spec"]["containers"]
    assert containers == [{"name": "web", "image": "nginx"}, {"name": "log", "image": "fluentd"}]
    web, log = (*CONTAINERS, by_name("web")), (*CONTAINERS, by_name("log"))
    assert owners(live) == {
        "a": {web, (*web, "name"), (*web, "image")},
        "b": {log, (*log, "name"), (*log, "image")},
    }
    (first, _) = live["metadata"]["managedFields"]
    assert first["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"] == {
        'k:{"name":"web"}': {".": {}, "f:image": {}, "f:name": {}}
    }
    # Another manager's container item is its own: changing its image conflicts.
    with pytest.raises(StatusError) as raised:
        applied(live, deployment({"name": "log", "image": "vector"}), "a")
    assert raised.value.message == (
        'Apply failed with 1 conflict: conflict with "b": '
        '.spec.template.spec.containers[name="log"].image'
    )
    # Leaving its container out removes it; the other manager's stays.
    dropped = applied(live, deployment(), "a")
    assert dropped["spec"]["template"]["spec"]["containers"] == [
        {"name": "log", "image": "fluentd"}
    ]
    assert set(owners(dropped)) == {"b"}


def test_an_item_someone_else_owns_a_field_of_stays() -> None:
    live = applied(None, deployment({"name": "web", "image": "nginx"}), "a")
    live = applied(live, deployment({"name": "web", "stdin": True}), "b")
    assert live["spec"]["template"]["spec"]["containers"] == [
        {"name": "web", "image": "nginx", "stdin": True}
    ]
    after = applied(live, deployment(), "a")
    # a's image goes; the item stays, for b's field in it.
    assert after["spec"]["template"]["spec"]["containers"] == [{"name": "web", "stdin": True}]


def test_key_fields_left_out_take_their_schema_default() -> None:
    port = {"containerPort": 80}
    live = applied(None, deployment({"name": "web", "ports": [port]}), "a")
    live["spec"]["template"]["spec"]["containers"][0]["ports"][0]["protocol"] = "TCP"  # defaulted
    again = applied(live, deployment({"name": "web", "ports": [{**port, "name": "http"}]}), "a")
    assert again["spec"]["template"]["spec"]["containers"][0]["ports"] == [
        {"containerPort": 80, "protocol": "TCP", "name": "http"}
    ]
    key = Key((("containerPort", 80), ("protocol", "TCP")))
    assert (*CONTAINERS, by_name("web"), "ports", key, "name") in owners(again)["a"]


def test_set_lists_merge_value_by_value() -> None:
    live = applied(None, deployment(finalizers=("a.io/x",)), "a")
    live = applied(live, deployment(finalizers=("b.io/y",)), "b")
    assert live["metadata"]["finalizers"] == ["a.io/x", "b.io/y"]
    assert owners(live)["b"] == {("metadata", "finalizers", Value("b.io/y"))}
    after = applied(live, deployment(), "a")
    assert after["metadata"]["finalizers"] == ["b.io/y"]


def test_ordinary_writes_own_the_items_they_change() -> None:
    created = deployment({"name": "web", "image": "nginx"}, {"name": "log", "image": "fluentd"})
    managed_fields.record_update(None, created, "create", "apps/v1", SHAPES)
    edited = deployment({"name": "web", "image": "nginx:2"}, {"name": "log", "image": "fluentd"})
    managed_fields.record_update(created, edited, "edit", "apps/v1", SHAPES)
    web = (*CONTAINERS, by_name("web"))
    assert owners(edited)["edit"] == {(*web, "image")}
    assert (*web, "image") not in owners(edited)["create"]
    assert (*CONTAINERS, by_name("log"), "image") in owners(edited)["create"]
