"""The registry's patch application (services/registry/generic/patching/merge.py): JSON
patch, merge patch and strategic merge patch with kube's merge keys and
directives."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from services.registry.builtin import kind_schemas
from services.registry.generic.patching import merge
from strata.api import patch_types
from strata.api.errors import StatusError

# The rules kubectl and the gateway read off the Deployment schema.
DEPLOYMENT_RULES = merge.rules_for(kind_schemas.DEPLOYMENT)


def applied(content_type: str, original: Any, patch: Any) -> Any:
    return merge.apply(content_type, original, orjson.dumps(patch), DEPLOYMENT_RULES)


def test_merge_rules_come_from_the_schema() -> None:
    rules = DEPLOYMENT_RULES
    pod = "spec.template.spec"
    assert rules.keys[f"{pod}.containers"] == "name"
    assert rules.keys[f"{pod}.containers[].ports"] == "containerPort"
    assert rules.keys[f"{pod}.containers[].env"] == "name"
    assert rules.keys[f"{pod}.volumes"] == "name"
    assert rules.keys["metadata.ownerReferences"] == "uid"
    assert rules.keys["status.conditions"] == "type"
    assert f"{pod}.containers[].args" not in rules.keys  # atomic
    assert rules.sets == {"metadata.finalizers", "spec.template.metadata.finalizers"}
    service = merge.rules_for(kind_schemas.SERVICE)
    assert service.keys["spec.ports"] == "port"
    assert merge.rules_for(None).keys == {"metadata.ownerReferences": "uid"}


def deployment(*containers: dict[str, Any]) -> dict[str, Any]:
    return {"spec": {"template": {"spec": {"containers": list(containers)}}}}


def containers(obj: dict[str, Any]) -> Any:
    return obj["spec"]["template"]["spec"]["containers"]


def test_merge_patch_merges_maps_deletes_nulls_and_replaces_lists() -> None:
    original = {"metadata": {"labels": {"a": "1", "b": "2"}}, "items": [1, 2], "keep": True}
    patch = {"metadata": {"labels": {"a": None, "c": "3"}}, "items": [3]}
    assert applied(patch_types.MERGE_PATCH, original, patch) == {
        "metadata": {"labels": {"b": "2", "c": "3"}},
        "items": [3],
        "keep": True,
    }


def test_strategic_merge_merges_containers_by_name() -> None:
    original = deployment({"name": "a", "image": "x:1"}, {"name": "b", "image": "y:1"})
    patch = deployment({"name": "b", "image": "y:2"}, {"name": "c", "image": "z:1"})
    assert containers(applied(patch_types.STRATEGIC_MERGE_PATCH, original, patch)) == [
        {"name": "a", "image": "x:1"},
        {"name": "b", "image": "y:2"},
        {"name": "c", "image": "z:1"},
    ]
    # A merge patch replaces the whole list instead.
    assert containers(applied(patch_types.MERGE_PATCH, original, patch)) == containers(patch)


def test_strategic_merge_nested_lists_use_their_own_keys() -> None:
    original = deployment(
        {"name": "a", "env": [{"name": "X", "value": "1"}], "ports": [{"containerPort": 80}]}
    )
    patch = deployment(
        {
            "name": "a",
            "env": [{"name": "Y", "value": "2"}],
            "ports": [{"containerPort": 80, "name": "http"}],
        }
    )
    assert containers(applied(patch_types.STRATEGIC_MERGE_PATCH, original, patch)) == [
        {
            "name": "a",
            "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}],
            "ports": [{"containerPort": 80, "name": "http"}],
        }
    ]


def test_strategic_merge_directives() -> None:
    original = deployment({"name": "a", "image": "x"}, {"name": "b", "image": "y"})
    deleted = applied(
        patch_types.STRATEGIC_MERGE_PATCH, original, deployment({"name": "a", "$patch": "delete"})
    )
    assert containers(deleted) == [{"name": "b", "image": "y"}]

    replaced = applied(
        patch_types.STRATEGIC_MERGE_PATCH,
        original,
        deployment({"$patch": "replace"}, {"name": "c", "image": "z"}),
    )
    assert containers(replaced) == [{"name": "c", "image": "z"}]

    ordered = deployment({"name": "a", "image": "x2"})
    ordered["spec"]["template"]["spec"]["$setElementOrder/containers"] = [
        {"name": "b"},
        {"name": "a"},
    ]
    reordered = applied(patch_types.STRATEGIC_MERGE_PATCH, original, ordered)
    assert [c["name"] for c in containers(reordered)] == ["b", "a"]
    assert containers(reordered)[1]["image"] == "x2"

    map_replaced = applied(
        patch_types.STRATEGIC_MERGE_PATCH,
        {"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}},
        {"spec": {"strategy": {"type": "Recreate", "$retainKeys": ["type"]}}},
    )
    assert map_replaced == {"spec": {"strategy": {"type": "Recreate"}}}


def test_strategic_merge_finalizers_are_a_set() -> None:
    original = {"metadata": {"finalizers": ["a/x", "b/y"]}}
    merged = applied(
        patch_types.STRATEGIC_MERGE_PATCH, original, {"metadata": {"finalizers": ["b/y", "c/z"]}}
    )
    assert merged["metadata"]["finalizers"] == ["a/x", "b/y", "c/z"]
    removed = applied(
        patch_types.STRATEGIC_MERGE_PATCH,
        original,
        {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a/x"]}},
    )
    assert removed["metadata"]["finalizers"] == ["b/y"]


def test_strategic_merge_item_without_its_merge_key_is_unprocessable() -> None:
    with pytest.raises(StatusError) as raised:
        applied(patch_types.STRATEGIC_MERGE_PATCH, deployment(), deployment({"image": "x"}))
    assert raised.value.code == 422
    assert "does not contain declared merge key: name" in raised.value.message


def test_json_patch() -> None:
    original = {"spec": {"replicas": 1}, "metadata": {"labels": {"a": "1"}}}
    patch = [
        {"op": "replace", "path": "/spec/replicas", "value": 3},
        {"op": "add", "path": "/metadata/labels/b", "value": "2"},
        {"op": "remove", "path": "/metadata/labels/a"},
    ]
    assert applied(patch_types.JSON_PATCH, original, patch) == {
        "spec": {"replicas": 3},
        "metadata": {"labels": {"b": "2"}},
    }


@pytest.mark.parametrize(
    ("patch", "code"),
    [
        ([{"op": "remove", "path": "/missing"}], 422),
        ([{"op": "test", "path": "/spec", "value": 0}], 422),
        ({"op": "add"}, 400),
        (b"not json", 400),
    ],
)
def test_json_patch_errors(patch: Any, code: int) -> None:
    body = patch if isinstance(patch, bytes) else orjson.dumps(patch)
    with pytest.raises(StatusError) as raised:
        merge.apply(patch_types.JSON_PATCH, {"spec": {}}, body)
    assert raised.value.code == code


def test_unknown_patch_type_is_415() -> None:
    with pytest.raises(StatusError) as raised:
        merge.apply("application/apply-patch+yaml", {}, b"{}")
    assert raised.value.code == 415
