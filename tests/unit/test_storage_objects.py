"""Stored bytes and the revision stamped into them without decoding."""

from __future__ import annotations

import orjson
import pytest

from services.storage import objects


@pytest.mark.parametrize(
    "body",
    [
        {"kind": "Thing", "metadata": {}},
        {"apiVersion": "v1", "kind": "Thing", "metadata": {"name": "a", "labels": {"x": "1"}}},
        # A nested metadata before the object's own, and none at all.
        {"spec": {"template": {"metadata": {"name": "inner"}}}, "metadata": {"name": "outer"}},
        {"kind": "NoMetadata"},
        {"metadata": {"name": "a", "resourceVersion": "17"}, "data": {"metadata": "x"}},
    ],
)
def test_stamping_matches_decoding(body: dict[str, object]) -> None:
    obj, data = objects.for_etcd("/things/ns/a", orjson.dumps(body))
    stamped = orjson.loads(objects.stamped(data, 42))
    expected = orjson.loads(data)
    expected["metadata"]["resourceVersion"] = "42"
    assert stamped == expected
    assert "resourceVersion" not in orjson.loads(data)["metadata"]
    assert list(orjson.loads(data))[: len(obj)] == list(obj)
    envelope = objects.written("/things/ns/a", obj, data, 42)
    assert envelope.resource_version == 42 and orjson.loads(envelope.value) == expected
