"""The cheap paths of the request path's kube-byte helpers give the bytes the
full ones give: an object already in kube's key order is recognised by a check
(and stamped on read without rebuilding it), and Go's escapes are found with a
one-byte search."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from services.storage import objects
from strata.api import gomarshal, key_order

_KEY = "/configmaps/bench/a"


def _stored(obj: dict[str, Any]) -> bytes:
    """obj as storage keeps it (for_etcd: kube's order, no resourceVersion)."""
    return objects.for_etcd(_KEY, orjson.dumps(obj))[1]


@pytest.mark.parametrize(
    ("obj", "ordered"),
    [
        ({"kind": "K", "apiVersion": "v1", "metadata": {"name": "a", "uid": "u"}}, True),
        ({"apiVersion": "v1", "kind": "K", "metadata": {}}, False),
        ({"kind": "K", "metadata": {}, "apiVersion": "v1"}, False),
        ({"kind": "K", "apiVersion": "v1", "metadata": {"uid": "u", "name": "a"}}, False),
        # Fields ObjectMeta does not have come after all it has, as they were.
        ({"kind": "K", "metadata": {"name": "a", "zz": 1, "aa": 2}, "data": {}}, True),
        ({"kind": "K", "metadata": {"zz": 1, "name": "a"}}, False),
        ({"data": {}}, True),
    ],
)
def test_in_order_says_whether_built_in_would_change_the_order(
    obj: dict[str, Any], ordered: bool
) -> None:
    assert key_order.in_order(obj) is ordered
    rebuilt = key_order.built_in(orjson.loads(orjson.dumps(obj)))
    assert key_order.in_order(rebuilt)
    same = list(rebuilt) == list(obj) and list(rebuilt.get("metadata", {})) == list(
        obj.get("metadata", {})
    )
    assert same is ordered


def test_a_read_in_order_is_stamped_where_kube_writes_resource_version() -> None:
    obj = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "a",
            "namespace": "bench",
            "creationTimestamp": "2026-11-25T15:40:34Z",
            "uid": "u-1",
            "labels": {"x": "1"},
        },
        "data": {"key": "v"},
    }
    read = objects.from_etcd(_KEY, _stored(obj), 42)
    assert read.value == (
        b'{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","namespace":"bench",'
        b'"uid":"u-1","resourceVersion":"42","creationTimestamp":"2026-11-25T15:40:34Z",'
        b'"labels":{"x":"1"}},"data":{"key":"v"}}'
    )
    assert (read.name, read.namespace, read.uid, dict(read.labels)) == (
        "a",
        "bench",
        "u-1",
        {"x": "1"},
    )


@pytest.mark.parametrize(
    "value",
    [
        # Stored before kube's order was kept: reordered on the way out.
        b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"uid":"u-1","name":"a"},"data":{}}',
        # No uid: resourceVersion still goes where ObjectMeta has it.
        b'{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","namespace":"n"}}',
    ],
)
def test_a_read_out_of_order_or_without_uid_is_in_kubes_order(value: bytes) -> None:
    read = orjson.loads(objects.from_etcd(_KEY, value, 7).value)
    assert list(read)[:3] == ["kind", "apiVersion", "metadata"]
    meta = list(read["metadata"])
    assert meta == sorted(meta, key=key_order.OBJECT_META.index)
    assert read["metadata"]["resourceVersion"] == "7"


@pytest.mark.parametrize(
    ("value", "written"),
    [
        ("a<b>&c", '"a\\u003cb\\u003e\\u0026c"'),
        ("line\u2028para\u2029", '"line\\u2028para\\u2029"'),
        # Other characters whose UTF-8 starts as the separators' do stay as they are.
        ("\u2026 \u20ac \u2013", '"\u2026 \u20ac \u2013"'),
    ],
)
def test_go_escapes(value: str, written: str) -> None:
    assert gomarshal.marshal(value) == written
