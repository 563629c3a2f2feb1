"""kube's strict decoding errors of JSON bodies: duplicate fields by path, unknown
fields among them in kube's order, and a JSON patch's operations' own fields."""

from __future__ import annotations

import json
import random

import orjson

from strata.api.strict_decoding import (
    duplicate_fields,
    json_patch_errors,
    key_order,
    keys_in,
    may_repeat,
    object_errors,
)


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


def _repeats(body: bytes) -> bool:
    """Whether body gives a key twice, by the standard library's full parse."""
    repeated = False

    def pairs(items: list[tuple[str, object]]) -> dict[str, object]:
        nonlocal repeated
        repeated |= len({k for k, _ in items}) != len(items)
        return dict(items)

    json.loads(body, object_pairs_hook=pairs)
    return repeated


def _random_body(rng: random.Random, depth: int = 0) -> str:
    """A JSON text with keys and strings that look like keys, quotes and
    backslashes, a repeated key now and then, spaces here and there."""
    words = ["a", "b", 'a":', 'x\\"', '\\"k\\":', "k\\", " :", "c d"]
    if depth > 3 or rng.random() < 0.3:
        return json.dumps(rng.choice([*words, 1, None, True]))
    if rng.random() < 0.3:
        return "[" + ",".join(_random_body(rng, depth + 1) for _ in range(rng.randint(0, 3))) + "]"
    keys = [rng.choice(words) for _ in range(rng.randint(0, 4))]
    colon = rng.choice([":", ":", ": ", " :"])
    items = [f"{json.dumps(k)}{colon}{_random_body(rng, depth + 1)}" for k in keys]
    return "{" + ",".join(items) + "}"


def test_may_repeat_never_misses_a_repeated_key() -> None:
    rng = random.Random(28)
    spared = 0
    for _ in range(5000):
        body = _random_body(rng).encode()
        keys = keys_in(orjson.loads(body))
        if _repeats(body):
            assert may_repeat(body, keys), body
        elif not may_repeat(body, keys):
            spared += 1
    assert spared > 1000  # most bodies are spared the second parse


def test_may_repeat_spares_what_clients_send() -> None:
    applied = json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "b: c"}})
    obj = {
        "kind": "ConfigMap",
        "metadata": {
            "name": "x",
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": applied},
        },
        "data": {"k": 'say "hi": now', "l": ""},
    }
    for body in (orjson.dumps(obj), orjson.dumps(obj, option=orjson.OPT_INDENT_2)):
        assert not may_repeat(body, keys_in(orjson.loads(body)))
    twice = b'{"kind":"ConfigMap","data":{"k":"1","k":"2"}}'
    assert may_repeat(twice, keys_in(orjson.loads(twice)))


def test_object_errors_given_the_key_count_finds_what_it_finds_without() -> None:
    twice = b'{"kind":"A","spec":{"paused":true,"paused":false,"x":1}}'
    once = b'{"kind":"A","spec":{"paused":true,"x":1}}'
    for body in (twice, once):
        keys = keys_in(orjson.loads(body))
        for typed in (True, False):
            given = object_errors(body, ["spec.x"], typed=typed, keys=keys)
            assert given == object_errors(body, ["spec.x"], typed=typed)
    assert 'duplicate field "spec.paused"' in object_errors(twice, [], typed=True, keys=4)
