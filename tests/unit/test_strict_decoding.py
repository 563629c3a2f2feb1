"""kube's strict decoding errors of JSON bodies: duplicate fields by path, unknown
fields among them in kube's order, and a JSON patch's operations' own fields."""

from __future__ import annotations

from strata.api.strict_decoding import duplicate_fields, json_patch_errors, key_order, object_errors


def test_paths_of_duplicates_at_every_depth_in_document_order() -> None:
    body = (
        b'{"kind": "A", "kind": "B", "spec": {"paused": true, "paused": false,'
        b' "containers": [{"name": "a"}, {"name": "b", "image": "x", "image": "y", "image": "z"}]},'
        b' "data": {"k": "1", "j": "2", "k": "3", "j": "4"}}'
    )
    assert duplicate_fields(body) == [
        "kind",
        "spec.paused",
        "spec.containers[1].image",
        "data.k",
        "data.j",
    ]


def test_bodies_without_duplicates_or_not_json_have_none() -> None:
    assert duplicate_fields(b'{"a": {"a": {"a": [1, {"a": 2}]}}}') == []
    assert duplicate_fields(b"[1, 2]") == []
    assert duplicate_fields(b"{not json") == []
    assert duplicate_fields(b"[" * 100_000 + b"]" * 100_000) == []


# kube's field validation test body: a Deployment giving fields twice, some unknown.
DEPLOYMENT = b"""{
  "apiVersion": "apps/v1", "kind": "Deployment",
  "metadata": {"name": "dupename", "name": "d", "labels": {"app": "nginx"}, "unknownMeta": "x"},
  "spec": {
    "unknown1": "val1", "unknownDupe": "valDupe", "unknownDupe": "valDupe2",
    "paused": true, "paused": false,
    "template": {"spec": {"containers": [{
      "name": "nginx", "unknownNested": "val1",
      "imagePullPolicy": "Always", "imagePullPolicy": "Never"}]}}}}"""
UNKNOWN = [
    "metadata.unknownMeta",
    "spec.unknown1",
    "spec.unknownDupe",
    "spec.template.spec.containers[0].unknownNested",
]


def test_a_built_in_kinds_problems_interleave_in_document_order() -> None:
    assert object_errors(DEPLOYMENT, UNKNOWN, typed=True) == [
        'duplicate field "metadata.name"',
        'unknown field "metadata.unknownMeta"',
        'unknown field "spec.unknown1"',
        'unknown field "spec.unknownDupe"',
        'duplicate field "spec.paused"',
        'unknown field "spec.template.spec.containers[0].unknownNested"',
        'duplicate field "spec.template.spec.containers[0].imagePullPolicy"',
    ]


def test_a_custom_resources_duplicates_come_first_then_unknown_fields_in_key_order() -> None:
    assert object_errors(DEPLOYMENT, list(reversed(UNKNOWN)), typed=False) == [
        'duplicate field "metadata.name"',
        'duplicate field "spec.unknownDupe"',
        'duplicate field "spec.paused"',
        'duplicate field "spec.template.spec.containers[0].imagePullPolicy"',
        'unknown field "metadata.unknownMeta"',
        'unknown field "spec.template.spec.containers[0].unknownNested"',
        'unknown field "spec.unknown1"',
        'unknown field "spec.unknownDupe"',
    ]


def test_without_duplicates_only_unknown_fields() -> None:
    assert object_errors(b'{"a": {"b": 1}}', ["a.b"], typed=True) == ['unknown field "a.b"']
    assert object_errors(b'{"a": 1}', [], typed=False) == []
    assert sorted(["a.b", "a", "a2", "a[0].c"], key=key_order) == ["a", "a.b", "a[0].c", "a2"]


def test_json_patch_operations_fields_they_do_not_have_or_give_twice() -> None:
    patch = (
        b'[{"op": "add", "path": "/spec/a", "value": "v", "foo": "bar"},'
        b' {"op": "add", "path": "/spec/b", "path": "/spec/c", "value": 1},'
        b' {"op": "remove", "path": "/x", "bar": 1, "bar": 2}, 7]'
    )
    assert json_patch_errors(patch) == [
        'json patch unknown field "[0].foo"',
        'json patch duplicate field "[1].path"',
        'json patch unknown field "[2].bar"',
    ]
    assert json_patch_errors(b'{"op": "add"}') == []
    assert json_patch_errors(b"[not json") == []
