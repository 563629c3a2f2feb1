"""YAML request bodies as JSON, and the keys they repeat in the words and on
the lines kube's strict YAML decoder gives (its field validation tests' bodies)."""

from __future__ import annotations

import orjson

from services.gateway.patches import go_print
from services.gateway.yaml_bodies import go_key, to_json

DEPLOYMENT = b"""apiVersion: apps/v1
kind: Deployment
metadata:
  name: dupename
  name: d
  unknownMeta: metaVal
  labels:
    app: nginx
spec:
  unknown1: val1
  unknownDupe: valDupe
  unknownDupe: valDupe2
  paused: true
  paused: false
  selector:
    matchLabels:
      app: nginx
  template:
    metadata:
      labels:
        app: nginx
    spec:
      containers:
      - name: nginx
        image: nginx:latest
        unknownNested: val1
        imagePullPolicy: Always
        imagePullPolicy: Never"""


def test_repeated_keys_by_the_line_of_their_value_last_value_kept() -> None:
    converted, repeated = to_json(DEPLOYMENT)
    assert repeated == [
        'line 5: key "name" already set in map',
        'line 12: key "unknownDupe" already set in map',
        'line 14: key "paused" already set in map',
        'line 28: key "imagePullPolicy" already set in map',
    ]
    obj = orjson.loads(converted)
    assert obj["metadata"]["name"] == "d" and obj["spec"]["paused"] is False


def test_nested_repeats_come_before_their_mappings_own() -> None:
    body = b"a:\n  x: 1\n  x: 2\na:\n  y: 1\n  y: 2\n"
    assert to_json(body)[1] == [
        'line 3: key "x" already set in map',
        'line 6: key "y" already set in map',
        'line 5: key "a" already set in map',
    ]


def test_json_bodies_tabs_and_all_are_read_as_json_with_yaml_lines() -> None:
    body = b'{\n\t"spec": {\n\t\t"paused": false,\n\t\t"paused": true\n\t},\n\t"n": 1e3\n}'
    converted, repeated = to_json(body)
    assert converted == body
    assert repeated == ['line 4: key "paused" already set in map']
    assert to_json(b'{"a": 1}') == (b'{"a": 1}', [])


def test_keys_of_other_types_as_go_prints_them_and_as_strings_in_json() -> None:
    body = b"2: a\n2: b\ntrue: c\nyes: d\n1.5: e\n1.5: f\n~: g\nnull: h\n"
    converted, repeated = to_json(body)
    assert [line.split(": ", 1)[1] for line in repeated] == [
        "key 2 already set in map",
        "key true already set in map",
        "key 1.5 already set in map",
        "key <nil> already set in map",
    ]
    assert orjson.loads(converted) == {"2": "b", "true": "d", "1.5": "f", "null": "h"}
    assert (go_key(2.0), go_key('é"')) == ("2", '"é\\""')


def test_an_alias_of_its_own_mapping_ends() -> None:
    assert to_json(b"a: &x\n  b: 1\nc: *x\n") == (b'{"a":{"b":1},"c":{"b":1}}', [])


def test_go_print_of_a_patch() -> None:
    patch = {"spec": {"paused": False, "b": [1, "x", None], "a": 1.5}}
    assert go_print(patch) == "map[spec:map[a:1.5 b:[1 x <nil>] paused:false]]"
