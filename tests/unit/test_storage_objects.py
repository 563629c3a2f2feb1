"""Stored bytes and the revision stamped into them without decoding: what a
writer makes final with its envelope is what storage makes of the same object
sent without one, and what storage answers for it is what a read decodes."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from services.storage import objects
from strata.api import key_order
from strata.storage import InvalidObject, ObjectTooLarge, envelopes

BUILT_IN = "/things/ns/a"
CUSTOM = "/example.com/widgets/ns/a"

BODIES: list[dict[str, Any]] = [
    {"kind": "Thing", "metadata": {}},
    {"apiVersion": "v1", "kind": "Thing", "metadata": {"name": "a", "labels": {"x": "1"}}},
    # A nested metadata before the object's own, and none at all.
    {"spec": {"template": {"metadata": {"name": "inner"}}}, "metadata": {"name": "outer"}},
    {"kind": "NoMetadata"},
    {"metadata": {"name": "a", "resourceVersion": "17"}, "data": {"metadata": "x"}},
    # As the registry writes them: a uid, owners (with uids of their own), a
    # deletion under way; resourceVersion the only field, the last, the first.
    {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {
            "name": "a",
            "namespace": "ns",
            "uid": "u-1",
            "resourceVersion": "9",
            "creationTimestamp": "2026-01-02T03:04:05Z",
            "deletionTimestamp": "2026-01-02T03:04:06Z",
            "labels": {"app": "x", "n": 1},
            "ownerReferences": [{"kind": "O", "name": "o", "uid": "u-0"}],
            "finalizers": ["f"],
        },
        "spec": {"zz": {"metadata": {"uid": "u-1"}}, "aa": [1, 2.5, None]},
    },
    {"kind": "Widget", "metadata": {"resourceVersion": "3"}},
    {"kind": "Widget", "metadata": {"annotations": {"a": "b"}}},
    {"kind": "Widget", "metadata": {"uid": "u", "selfLink": "/x", "zzz": 1}},
]


def _decoded_and_stamped(key: str, data: bytes, revision: int) -> bytes:
    """data with resourceVersion set the long way: decoded, set, encoded in kube's order."""
    obj = orjson.loads(data)
    obj.setdefault("metadata", {})["resourceVersion"] = str(revision)
    return key_order.dumps(obj, custom=key_order.holds_custom_resources(key))


@pytest.mark.parametrize("key", [BUILT_IN, CUSTOM])
@pytest.mark.parametrize("body", BODIES)
def test_stamping_matches_decoding(key: str, body: dict[str, Any]) -> None:
    envelope, data = objects.for_etcd(key, orjson.dumps(body))
    assert "resourceVersion" not in orjson.loads(data)["metadata"]
    stamped = envelopes.stamped(data, envelope.resource_version_at, 42)
    if key == CUSTOM or "uid" in body.get("metadata", {}):
        # Byte for byte: where kube's order puts resourceVersion.
        assert stamped == _decoded_and_stamped(key, data, 42)
    expected = orjson.loads(data)
    expected["metadata"]["resourceVersion"] = "42"
    assert orjson.loads(stamped) == expected
    answered = envelopes.answer(key, envelopes.Final(envelope, data), 42)
    assert answered.resource_version == 42 and answered.value == stamped


@pytest.mark.parametrize("key", [BUILT_IN, CUSTOM])
@pytest.mark.parametrize("body", BODIES)
def test_final_is_what_storage_makes_of_the_object_sent_without_an_envelope(
    key: str, body: dict[str, Any]
) -> None:
    before = orjson.dumps(body)
    made = envelopes.final(key, body)
    assert orjson.dumps(body) == before  # the writer's object is left as it was
    assert made == objects.for_etcd(key, before)
    # Passed with its envelope, storage keeps it as it is.
    assert objects.for_etcd(key, made.value, made.envelope) == made


@pytest.mark.parametrize("key", [BUILT_IN, CUSTOM])
def test_the_answer_to_a_write_is_what_a_read_decodes(key: str) -> None:
    body = BODIES[5]
    made = envelopes.final(key, body)
    answered = envelopes.answer(key, made, 77)
    read = objects.from_etcd(key, made.value, 77)
    assert answered == read
    assert (answered.name, answered.namespace, answered.uid) == ("a", "ns", "u-1")
    assert dict(answered.labels) == {"app": "x", "n": "1"}
    assert answered.owned and answered.deleting


def test_envelope_of_metadata() -> None:
    assert envelopes.envelope_of({}) == envelopes.envelope_of({"labels": None})
    envelope = envelopes.envelope_of({"name": "a", "ownerReferences": [], "labels": {"k": "v"}})
    assert (envelope.name, envelope.owned, envelope.deleting) == ("a", False, False)
    assert dict(envelope.labels) == {"k": "v"} and envelope.resource_version_at == 0


def test_a_final_value_over_the_limit_is_object_too_large_in_storages_words() -> None:
    body: dict[str, Any] = {"kind": "Thing", "metadata": {"name": "big"}, "data": "x" * 1_600_000}
    with pytest.raises(ObjectTooLarge) as from_writer:
        envelopes.final(BUILT_IN, body)
    with pytest.raises(ObjectTooLarge) as from_storage:
        objects.for_etcd(BUILT_IN, orjson.dumps(body))
    assert str(from_writer.value) == str(from_storage.value)
    envelope = envelopes.envelope_of(body["metadata"])
    envelope.resource_version_at = 30
    with pytest.raises(ObjectTooLarge) as enveloped:
        objects.for_etcd(BUILT_IN, orjson.dumps(body), envelope)
    assert str(enveloped.value).startswith("object is too large to store: ")


@pytest.mark.parametrize("at", [0, 2, 10_000])
def test_an_envelope_that_does_not_fit_its_value_is_invalid(at: int) -> None:
    made = envelopes.final(BUILT_IN, {"kind": "Thing", "metadata": {"name": "a", "uid": "u"}})
    made.envelope.resource_version_at = at
    with pytest.raises(InvalidObject):
        objects.for_etcd(BUILT_IN, made.value, made.envelope)
