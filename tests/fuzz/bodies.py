"""Hypothesis strategies for request bodies, by operation: for a create or a
replace, the kind's valid body as it is, with parts mangled, or shaped by the
schema the document declares for it (its types, the values wrong); for a
patch, each patch type's documents (JSON patch operations, merge and
strategic merge patches with their directives, applied configurations); for a
delete, DeleteOptions. Each also as other content types and as bytes that are
no document at all. (tests/integration/test_fuzz.py fuzzes bodies at depth for
a few kinds; these are for every operation the document has.)"""

from __future__ import annotations

import json
from typing import Any

import yaml
from hypothesis import strategies as st

from tests.integration.test_fuzz import mutated, values

Doc = dict[str, Any]
# (content type, bytes); content type "" sends none.
Body = tuple[str, bytes]

JSON = "application/json"
PATCH_TYPES = [
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
]
OTHER_TYPES = [
    "",
    "text/plain",
    "application/yaml",
    "application/vnd.kubernetes.protobuf",
    "application/json; charset=utf-16",
    "application/apply-patch+cbor",
    "application/cbor",
    "multipart/form-data; boundary=x",
    "application/json-patch+json; charset=utf-8",
]
noise: st.SearchStrategy[bytes] = st.binary(max_size=64) | st.sampled_from(
    [b"", b"{", b"[]", b"null", b"\xff\xfe", b'{"a":1,"a":2}', b"- a\n- &x b\n- *x", b"\x00"]
)


def _schema(definitions: Doc, schema: Doc, depth: int) -> st.SearchStrategy[Any]:
    """Values shaped by an OpenAPI schema: its properties and types, possibly
    each wrong."""
    if "$ref" in schema:
        if depth <= 0:
            return values
        target = definitions.get(schema["$ref"].rsplit("/", 1)[-1], {})
        return _schema(definitions, target, depth - 1)
    kind = schema.get("type")
    if schema.get("x-kubernetes-int-or-string"):
        return st.integers() | st.text(max_size=8) | values
    if kind == "object" and depth > 0:
        properties = {
            k: _schema(definitions, v, depth - 1) for k, v in schema.get("properties", {}).items()
        }
        extra = schema.get("additionalProperties")
        shaped = st.fixed_dictionaries({}, optional=properties)
        if isinstance(extra, dict):
            inner = _schema(definitions, extra, depth - 1)
            shaped = shaped | st.dictionaries(st.text(max_size=8), inner, max_size=3)
        return shaped | values
    if kind == "array" and depth > 0:
        item = _schema(definitions, schema.get("items", {}), depth - 1)
        return st.lists(item, max_size=3) | values
    simple = {
        "string": st.text(max_size=12),
        "integer": st.integers(min_value=-(2**65), max_value=2**65),
        "number": st.floats(allow_nan=False, allow_infinity=False),
        "boolean": st.booleans(),
    }
    return simple.get(str(kind), values) | values


def _encoded(document: Any, content_type: str) -> bytes:
    if content_type.startswith(("application/yaml", "application/apply-patch+yaml")):
        return yaml.safe_dump(document).encode()
    return json.dumps(document).encode()


@st.composite
def objects(draw: st.DrawFn, valid: Doc, definitions: Doc, schema: Doc | None) -> Body:
    """A create's or a replace's body."""
    shaped = _schema(definitions, schema, 6) if schema else values
    document = draw(
        st.just(valid) | mutated(valid) | mutated(valid) | shaped | values | st.just(valid)
    )
    content_type = draw(st.sampled_from([JSON] * 24 + ["application/yaml", *OTHER_TYPES]))
    if draw(st.integers(min_value=0, max_value=9)) == 0:
        return content_type, draw(noise)
    try:
        return content_type, _encoded(document, content_type)
    except yaml.YAMLError:
        return content_type, json.dumps(document).encode()


POINTERS = [
    "/metadata/labels/a",
    "/metadata/labels",
    "/metadata/name",
    "/metadata/finalizers/-",
    "/metadata/annotations/x~1y",
    "/data/a",
    "/spec/replicas",
    "/spec/template/spec/containers/0/image",
    "/rules/0/verbs/-",
    "/status",
    "",
    "/",
    "/-",
    "~",
    "/a~2b",
    "/x/0/1/2",
]
json_patch_operation = st.fixed_dictionaries(
    {"op": st.sampled_from(["add", "remove", "replace", "move", "copy", "test", "bogus"])},
    optional={
        "path": st.sampled_from(POINTERS) | st.text(max_size=10) | values,
        "from": st.sampled_from(POINTERS) | values,
        "value": values,
    },
)
DIRECTIVES = [
    {"$patch": "delete"},
    {"$patch": "replace"},
    {"$patch": "merge"},
    {"$patch": "bogus"},
    {"metadata": {"finalizers": [{"$patch": "delete"}]}},
    {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}},
    {"metadata": {"$setElementOrder/finalizers": ["a"]}},
    {"spec": {"$retainKeys": ["replicas"], "replicas": 3}},
    {"spec": {"template": {"spec": {"containers": [{"name": "c", "$patch": "delete"}]}}}},
    {"metadata": {"labels": {"a": None}}},
]


@st.composite
def patches(draw: st.DrawFn, valid: Doc) -> Body:
    """A patch's body, of any patch type (and of others)."""
    content_type = draw(st.sampled_from(PATCH_TYPES * 6 + OTHER_TYPES + [JSON]))
    if draw(st.integers(min_value=0, max_value=9)) == 0:
        return content_type, draw(noise)
    if content_type.startswith("application/json-patch+json"):
        document: Any = draw(st.lists(json_patch_operation, max_size=4) | values)
    elif content_type.startswith("application/apply-patch"):
        document = draw(st.just(valid) | mutated(valid) | values)
    else:
        document = draw(
            mutated(valid) | st.sampled_from(DIRECTIVES) | values | st.just({"metadata": {}})
        )
    try:
        return content_type, _encoded(document, content_type)
    except yaml.YAMLError:
        return content_type, json.dumps(document).encode()


delete_options = st.fixed_dictionaries(
    {},
    optional={
        "kind": st.sampled_from(["DeleteOptions", "Status"]) | values,
        "apiVersion": st.sampled_from(["v1", "meta.k8s.io/v1", "apps/v1"]) | values,
        "propagationPolicy": st.sampled_from(["Orphan", "Background", "Foreground", "x"]) | values,
        "gracePeriodSeconds": st.integers(min_value=-(2**64), max_value=2**64) | values,
        "orphanDependents": st.booleans() | values,
        "dryRun": st.sampled_from([["All"], ["x"], [], "All"]) | values,
        "preconditions": st.fixed_dictionaries(
            {}, optional={"uid": st.text(max_size=8) | values, "resourceVersion": values}
        )
        | values,
    },
)


@st.composite
def deletions(draw: st.DrawFn) -> Body | None:
    """A delete's body: mostly none, else DeleteOptions of any shape."""
    chosen = draw(st.integers(min_value=0, max_value=5))
    if chosen < 3:
        return None
    if chosen == 3:
        return draw(st.sampled_from([JSON, *OTHER_TYPES])), draw(noise)
    return JSON, json.dumps(draw(delete_options | values)).encode()
