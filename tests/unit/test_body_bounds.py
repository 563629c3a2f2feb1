"""Reading expensive bodies is bounded and answers as kube does: go-yaml's
alias ratio rule (services/gateway/yaml_bodies.py), JSON read and written as
deep as Go goes without recursion (strata/api/deep_json.py), patches applied
to any depth and refused with kube's 422 (services/registry/generic/patching/),
and Go's words for a ConfigMap's values of the wrong type."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from services.gateway import yaml_bodies
from services.registry.builtin.resources import BUILT_IN
from services.registry.generic import bodies
from services.registry.generic.patching import merge, patcher
from strata.api import deep_json, strict_decoding
from strata.api.errors import StatusError

HEADER = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: m\n"
CONFIGMAPS = next(r for r in BUILT_IN if r.name == "configmaps")


def nest(key: str, depth: int, leaf: str = '"v"') -> bytes:
    return (f'{{"{key}":' * depth + leaf + "}" * depth).encode()


def list100(aliases: int) -> bytes:
    return (
        HEADER
        + b"a: &a ["
        + b",".join([b"x"] * 100)
        + b"]\nb: ["
        + b",".join([b"*a"] * aliases)
        + b"]\n"
    )


def test_the_alias_ratio_is_go_yamls() -> None:
    """99% up to 400,000 decoded nodes, 10% from 4,000,000, linear between;
    nothing refused before 1,000 nodes and 100 aliased."""
    ratio = yaml_bodies.allowed_alias_ratio
    assert (ratio(1), ratio(400_000), ratio(4_000_000), ratio(10**9)) == (0.99, 0.99, 0.10, 0.10)
    assert ratio(2_200_000) == pytest.approx(0.545)
    assert not yaml_bodies.excessive(100, 101) and not yaml_bodies.excessive(999, 1000)
    assert yaml_bodies.excessive(1000, 1001)


def test_kubes_alias_limit() -> None:
    """kube took a 100-item list aliased 3,900 times and refused 4,000."""
    converted, _ = yaml_bodies.to_json(list100(3900))
    assert len(orjson.loads(converted)["b"]) == 3900
    with pytest.raises(
        yaml_bodies.ExcessiveAliasing, match=r"^yaml: document contains excessive aliasing$"
    ):
        yaml_bodies.to_json(list100(4000))


def test_a_billion_laughs_is_refused_before_it_expands() -> None:
    lines = [b'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, 9):
        a, b = "abcdefghi"[i], "abcdefghi"[i - 1]
        lines.append(f"{a}: &{a} [".encode() + b",".join([f"*{b}".encode()] * 9) + b"]")
    with pytest.raises(yaml_bodies.ExcessiveAliasing):
        yaml_bodies.to_json(HEADER + b"data:\n" + b"\n".join(b"  " + line for line in lines))


def test_scalar_aliases_count_once_each() -> None:
    body = HEADER + b"data:\n  k0: &s yyy\n" + b"".join(b"  k%d: *s\n" % i for i in range(1, 301))
    assert orjson.loads(yaml_bodies.to_json(body)[0])["data"]["k300"] == "yyy"


def test_an_anchor_holding_itself_is_go_yamls_error() -> None:
    for body in (b"a: &x {b: *x}\n", b"a: &x [1, *x]\n", b"q: 1\na: &x\n  b: &y [*x]\n"):
        with pytest.raises(
            yaml_bodies.AnchorContainsItself, match=r"^yaml: anchor 'x' value contains itself$"
        ):
            yaml_bodies.to_json(body)


def test_expansion_past_the_bound_is_refused() -> None:
    body = b"a: &s " + b"y" * 1_000_000 + b"\n" + b"".join(b"k%d: *s\n" % i for i in range(40))
    with pytest.raises(yaml_bodies.TooLargeExpanded):
        yaml_bodies.to_json(body)


def test_repeated_keys_under_aliases_and_deep_yaml() -> None:
    body = b"a: &m\n  x: 1\n  x: 2\nb: *m\nc: " + b"[" * 900 + b"]" * 900 + b"\n"
    converted, repeated = yaml_bodies.to_json(body)
    assert repeated == ['line 3: key "x" already set in map']
    assert deep_json.depth(orjson.loads(converted)["c"]) == 900


@pytest.mark.parametrize("depth", [1024, 1025, 9999, 10000])
def test_json_is_read_as_deep_as_go_reads_it(depth: int) -> None:
    value = deep_json.loads(b"[" + nest("x", depth - 1) + b"]")
    assert deep_json.depth(value) == depth


@pytest.mark.parametrize(
    ("body", "bracket"),
    [
        (b"[" + nest("x", 10000) + b"]", "{"),
        (b"[" * 10001, "["),
        (b'{"a":"[[[\\"[",' + b'"b":' + b"[" * 10001, "["),
        (b"[" * 1_400_000 + b"]" * 1_400_000, "["),  # past what the parser reads
        (b'["\\"{{", ' + b"[" * 10001 + b" " * 200_000, "["),
    ],
)
def test_past_gos_depth_is_gos_refusal(body: bytes, bracket: str) -> None:
    with pytest.raises(deep_json.NestingError) as refused:
        deep_json.loads(body)
    assert str(refused.value) == f"invalid character '{bracket}' exceeded max depth"


def test_what_is_not_json_keeps_orjsons_words() -> None:
    for body in (b"[" * 2000 + b"x", b"[" * 2000 + b"1 2", b'{"a":' * 1500 + b"}"):
        with pytest.raises(orjson.JSONDecodeError, match="depth limit exceeded"):
            deep_json.loads(body)
    with pytest.raises(orjson.JSONDecodeError, match="trailing comma is not allowed"):
        deep_json.loads(b"[1,]")


def test_deep_values_are_written_without_recursion() -> None:
    body = nest("x", 5000)
    assert deep_json.dumps(deep_json.loads(body)) == body
    assert (
        deep_json.go_print(deep_json.loads(nest("x", 3000))) == "map[x:" * 3000 + "v" + "]" * 3000
    )
    assert strict_decoding.keys_in(deep_json.loads(nest("x", 5000))) == 5000


def test_go_prints_floats_as_go() -> None:
    value = {"b": [1, 2.5, None, True], "a": {"y": 1e6, "x": 1e-5, "w": 123456.0, "v": 0.0001}}
    assert (
        deep_json.go_print(value)
        == "map[a:map[v:0.0001 w:123456 x:1e-05 y:1e+06] b:[1 2.5 <nil> true]]"
    )
    assert [deep_json.go_float(f) for f in (1234567.0, -2.5, 1.0, 0.1)] == [
        "1.234567e+06",
        "-2.5",
        "1",
        "0.1",
    ]


def test_configmap_values_are_refused_in_gos_words() -> None:
    undecodable = (
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal '
    )
    cases: list[tuple[dict[str, Any], str]] = [
        ({"data": {"k": {"x": "v"}}}, "object into Go struct field ConfigMap.data of type string"),
        ({"data": {"k": 1}}, "number into Go struct field ConfigMap.data of type string"),
        ({"data": ["k"]}, "array into Go struct field ConfigMap.data of type map[string]string"),
        (
            {"binaryData": {"k": True}},
            "bool into Go struct field ConfigMap.binaryData of type []uint8",
        ),
        (
            {"metadata": {"labels": {"a": []}}},
            "array into Go struct field ObjectMeta.metadata.labels of type string",
        ),
        ({"metadata": "m"}, "string into Go struct field ConfigMap.metadata of type v1.ObjectMeta"),
    ]
    for body, problem in cases:
        with pytest.raises(StatusError) as refused:
            bodies.decode_body(orjson.dumps({"metadata": {"name": "a"}, **body}), CONFIGMAPS)
        assert refused.value.message == undecodable + problem


DOCUMENT = {
    "kind": "ConfigMap",
    "apiVersion": "v1",
    "metadata": {"name": "t", "namespace": "d", "labels": {"z": "1", "b": "2"}},
    "data": {"k": "v"},
}


def _encoded(content_type: str, patch: Any) -> str:
    applied = merge.applied(content_type, DOCUMENT, orjson.dumps(patch))
    return deep_json.encode(applied.obj, applied.styles).decode()


def test_a_merge_patch_is_written_as_kube_writes_it() -> None:
    """The document and the maps the patch reached sorted, the rest as stored;
    a value added without its nulls, lists' too."""
    assert _encoded(
        "application/merge-patch+json", {"data": {"x": {"b": None, "a": [1, None]}}}
    ) == (
        '{"apiVersion":"v1","data":{"k":"v","x":{"a":[1]}},"kind":"ConfigMap",'
        '"metadata":{"name":"t","namespace":"d","labels":{"z":"1","b":"2"}}}'
    )
    assert _encoded("application/merge-patch+json", {"metadata": {"labels": {"c": "<"}}}) == (
        '{"apiVersion":"v1","data":{"k":"v"},"kind":"ConfigMap","metadata":'
        '{"labels":{"b":"2","c":"\\u003c","z":"1"},"name":"t","namespace":"d"}}'
    )
    patch = [{"op": "add", "path": "/metadata/labels/a", "value": "1"}]
    assert _encoded("application/json-patch+json", patch) == (
        '{"apiVersion":"v1","data":{"k":"v"},"kind":"ConfigMap","metadata":'
        '{"labels":{"a":"1","b":"2","z":"1"},"name":"t","namespace":"d"}}'
    )


@pytest.mark.parametrize(
    "content_type",
    [
        "application/merge-patch+json",
        "application/strategic-merge-patch+json",
        "application/json-patch+json",
    ],
)
def test_patches_apply_to_any_depth(content_type: str) -> None:
    deep = nest("x", 3000)
    patch = b'{"zz":' + deep + b"}"
    if content_type == "application/json-patch+json":
        patch = (
            b'[{"op":"add","path":"/zz","value":'
            + deep
            + b'},{"op":"copy","from":"/zz","path":"/zy"}]'
        )
    patched = merge.apply(content_type, DOCUMENT, patch)
    assert deep_json.dumps(patched["zz"]) == deep and patched["data"] == {"k": "v"}
    assert type(patched["zz"]) is dict


def test_patch_decoding_past_gos_depth() -> None:
    body = b'{"data":' + nest("x", 10000) + b"}"
    for content_type, prefix in (
        ("application/merge-patch+json", "error decoding patch: "),
        ("application/strategic-merge-patch+json", ""),
    ):
        with pytest.raises(StatusError) as refused:
            merge.apply(content_type, DOCUMENT, body)
        assert refused.value.message == prefix + "invalid character '{' exceeded max depth"


def test_the_converters_words() -> None:
    words = patcher._converter_words
    json_error = "json: cannot unmarshal {} into Go struct field {} of type {}"
    assert (
        words(json_error.format("object", "ConfigMap.data", "string"))
        == "unrecognized type: string"
    )
    assert words(json_error.format("array", "Spec.replicas", "int32")) == "unrecognized type: int32"
    assert words(json_error.format("array", "ConfigMap.data", "map[string]string")) == (
        "cannot restore map from slice"
    )
    same = json_error.format("string", "ConfigMap.data", "map[string]string")
    assert words(same) == same
