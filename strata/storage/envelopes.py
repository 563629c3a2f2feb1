"""An object's bytes as storage keeps them, and the envelope that travels with
them, made in one place for every writer.

The registry decodes an object once; with `final` it encodes it once, to the
very bytes storage keeps (kube's key order for its key, no
metadata.resourceVersion, within etcd's size limit), and sends the envelope
(storage.proto's Envelope: the fields an Object carries beside its value, and
where the revision goes) with the write. Storage then stores the bytes as they
are (encryption still sees them whole) and answers with `answer`, stamping the
revision in without decoding. A write without an envelope is decoded by storage
and goes through `final` there, so both paths store and answer the same bytes.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from typing import Any, NamedTuple

import orjson

from strata.api import key_order
from strata.proto.storage.v1 import storage_pb2
from strata.storage._errors import InvalidObject, ObjectTooLarge

# etcd's default --max-request-bytes: a larger put is refused by etcd itself.
MAX_OBJECT_BYTES = 1536 * 1024

_METADATA = b'"metadata":{'
_UID = b'"uid":"'
# A resourceVersion no object holds (a client cannot guess it): encoded in a
# custom resource's place among its sorted keys, it marks where the revision goes.
_MARKER = secrets.token_hex(16)
_MARKED = b'"resourceVersion":"' + _MARKER.encode() + b'"'


class Final(NamedTuple):
    """What an enveloped write carries: the envelope, and the value as storage keeps it."""

    envelope: storage_pb2.Envelope
    value: bytes


def envelope_of(metadata: Mapping[str, Any]) -> storage_pb2.Envelope:
    """The Object fields of an object with this metadata (resource_version_at
    left for `final` to fill).

    Set field by field, only what is there: upb copies what a constructor is
    given, and this runs on every write."""
    envelope = storage_pb2.Envelope()
    get = metadata.get
    if (namespace := get("namespace", "")) != "":
        envelope.namespace = str(namespace)
    if (name := get("name", "")) != "":
        envelope.name = str(name)
    if (uid := get("uid", "")) != "":
        envelope.uid = str(uid)
    if labels := get("labels"):
        try:
            envelope.labels.update(labels)
        except TypeError:  # not all strings (an object storage is asked to read)
            envelope.labels.update({str(k): str(v) for k, v in labels.items()})
    if get("ownerReferences"):
        envelope.owned = True
    if get("deletionTimestamp"):
        envelope.deleting = True
    return envelope


def check_size(key: str, value: bytes) -> None:
    """ObjectTooLarge, with storage's words, when value is over etcd's limit."""
    if len(value) > MAX_OBJECT_BYTES:
        raise ObjectTooLarge(
            key, f"object is too large to store: {len(value)} bytes, limit is {MAX_OBJECT_BYTES}"
        )


def final(key: str, obj: dict[str, Any]) -> Final:
    """obj as storage keeps it at key, with its envelope: kube's key order for
    the key (strata.api.key_order), without metadata.resourceVersion.

    obj is left as it is. ObjectTooLarge when the bytes are over etcd's limit.
    """
    meta = obj.get("metadata")
    if meta is None or "resourceVersion" in meta:
        meta = {k: v for k, v in (meta or {}).items() if k != "resourceVersion"}
        obj = {**obj, "metadata": meta}
    if key_order.holds_custom_resources(key):
        value, at = _sorted_with_place(obj)
    else:
        if not key_order.in_order(obj):
            # A copy: built_in puts the copy's metadata in order, not obj's.
            obj = key_order.built_in({**obj})
        value = orjson.dumps(obj)
        at = built_in_place(value)
    check_size(key, value)
    envelope = envelope_of(meta)
    envelope.resource_version_at = at
    return Final(envelope, value)


def built_in_place(value: bytes) -> int:
    """Where resourceVersion goes in a built-in object's bytes in kube's order:
    after uid, as ObjectMeta has it (first, for an object without one).

    kind, apiVersion and metadata lead such an object, so the first
    `"metadata":{` is its own; name, generateName and namespace, the only fields
    before uid, hold no quotes.
    """
    at = value.index(_METADATA) + len(_METADATA)
    uid = value.find(_UID, at)
    if uid != -1 and value.find(b"{", at, uid) == -1:
        return value.index(b'"', uid + len(_UID)) + 1
    return at


def _sorted_with_place(obj: dict[str, Any]) -> tuple[bytes, int]:
    """A custom resource's bytes, keys sorted at every level as Go writes a map,
    and where resourceVersion goes among metadata's sorted fields: found by
    encoding a marker there and cutting it out again."""
    marked = {**obj, "metadata": {**obj["metadata"], "resourceVersion": _MARKER}}
    data = orjson.dumps(marked, option=orjson.OPT_SORT_KEYS)
    start = data.index(_MARKED)
    end = start + len(_MARKED)
    if data[end : end + 1] == b",":  # a field follows: cut the marker and its comma
        return data[:start] + data[end + 1 :], start
    if data[start - 1 : start] == b",":  # the last field: cut the comma before it
        return data[: start - 1] + data[end:], start - 1
    return data[:start] + data[end:], start  # the only field


def stamped(value: bytes, at: int, revision: int) -> bytes:
    """value with "resourceVersion":"revision" put in at the offset at (as
    Envelope.resource_version_at says), without decoding."""
    field = b'"resourceVersion":"' + str(revision).encode() + b'"'
    following = value[at : at + 1]
    if following == b'"':  # at a field's start
        return value[:at] + field + b"," + value[at:]
    if value[at - 1 : at] == b"{":  # in an empty metadata
        return value[:at] + field + value[at:]
    return value[:at] + b"," + field + value[at:]  # after a field


def check_place(key: str, value: bytes, envelope: storage_pb2.Envelope) -> None:
    """InvalidObject when the envelope's resource_version_at cannot be where a
    field of value's metadata starts or ends (a writer that did not use final)."""
    at = envelope.resource_version_at
    if not 0 < at < len(value) or value[at : at + 1] not in (b'"', b",", b"}"):
        raise InvalidObject(key, f"the envelope for {key} does not fit its value")


def object_of(
    key: str, value: bytes, envelope: storage_pb2.Envelope, revision: int
) -> storage_pb2.Object:
    """The Object for value (already stamped with revision) and its envelope.

    An Envelope's fields have the numbers of Object's (storage.proto), so its
    bytes read as this Object: the labels map copied in C, not entry by entry
    in Python (several times faster). resource_version_at, numbered as
    resource_version, is overwritten here."""
    obj = storage_pb2.Object.FromString(envelope.SerializeToString())
    obj.key, obj.value, obj.resource_version = key, value, revision
    return obj


def answer(key: str, written: Final, revision: int) -> storage_pb2.Object:
    """The Object storage answers for written, stored at key at revision: its
    value stamped with the revision, its fields from the envelope."""
    envelope, value = written
    value = stamped(value, envelope.resource_version_at, revision)
    return object_of(key, value, envelope, revision)
