"""Between etcd values and storage envelopes.

etcd holds an object's JSON without metadata.resourceVersion (kube's versioner
clears it on write); on the way out the revision is set into the JSON once, here,
so no layer above has to decode an object to learn or stamp its version.
"""

from __future__ import annotations

from typing import Any

import orjson

from strata.api import key_order
from strata.proto.storage.v1 import storage_pb2
from strata.storage import CorruptObject, InvalidObject, ObjectTooLarge

# etcd's default --max-request-bytes: a larger put is refused by etcd itself.
MAX_OBJECT_BYTES = 1536 * 1024


def _decode(value: bytes) -> dict[str, Any] | None:
    try:
        obj = orjson.loads(value)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(obj, dict) or not isinstance(obj.get("metadata", {}), dict):
        return None
    return obj


_METADATA = b'"metadata":{'
_UID = b'"uid":"'


def for_etcd(key: str, value: bytes) -> tuple[dict[str, Any], bytes]:
    """The decoded object and the bytes to store (resourceVersion removed), in
    kube's key order (strata.api.key_order).

    A built-in object's kind, apiVersion and metadata lead, so the first
    `"metadata":{` in its bytes is the object's own and a revision can be
    stamped in without decoding.
    """
    decoded = _decode(value)
    if decoded is None:
        raise InvalidObject(key, f"object for {key} is not a JSON object with metadata")
    decoded.setdefault("metadata", {}).pop("resourceVersion", None)
    if key_order.holds_custom_resources(key):
        obj, data = decoded, key_order.dumps(decoded, custom=True)
    else:
        obj = key_order.built_in(decoded)
        data = orjson.dumps(obj)
    if len(data) > MAX_OBJECT_BYTES:
        raise ObjectTooLarge(
            key, f"object is too large to store: {len(data)} bytes, limit is {MAX_OBJECT_BYTES}"
        )
    return obj, data


def stored(key: str, value: bytes) -> dict[str, Any]:
    """A value read from etcd as an object; CorruptObject when it is not one."""
    obj = _decode(value)
    if obj is None:
        raise CorruptObject(key, f"stored value at {key} is not a JSON object with metadata")
    return obj


def stamped(data: bytes, revision: int) -> bytes:
    """data (as for_etcd wrote it) with metadata.resourceVersion set, without
    decoding: after uid, as ObjectMeta has it (first, for an object without one)."""
    at = data.index(_METADATA) + len(_METADATA)
    field = b'"resourceVersion":"' + str(revision).encode() + b'"'
    # name, generateName and namespace, the only fields before uid, hold no quotes.
    uid = data.find(_UID, at)
    if uid != -1 and data.find(b"{", at, uid) == -1:
        end = data.index(b'"', uid + len(_UID)) + 1
        return data[:end] + b"," + field + data[end:]
    return data[:at] + field + (b"" if data[at : at + 1] == b"}" else b",") + data[at:]


def _envelope(key: str, meta: dict[str, Any], value: bytes, revision: int) -> storage_pb2.Object:
    labels = meta.get("labels") or {}
    return storage_pb2.Object(
        key=key,
        value=value,
        resource_version=revision,
        namespace=str(meta.get("namespace", "")),
        name=str(meta.get("name", "")),
        uid=str(meta.get("uid", "")),
        labels={str(k): str(v) for k, v in labels.items()},
        owned=bool(meta.get("ownerReferences")),
        deleting=bool(meta.get("deletionTimestamp")),
    )


def written(key: str, obj: dict[str, Any], data: bytes, revision: int) -> storage_pb2.Object:
    """The envelope of an object just stored as data at revision."""
    if key_order.holds_custom_resources(key):
        # Sorted keys put resourceVersion among metadata's nested maps: encode.
        return envelope(key, obj, revision)
    return _envelope(key, obj["metadata"], stamped(data, revision), revision)


def envelope(key: str, obj: dict[str, Any], revision: int) -> storage_pb2.Object:
    """The envelope for obj at revision, its JSON stamped with that revision
    (and in kube's key order, whatever order it was stored in)."""
    meta = obj.setdefault("metadata", {})
    if (
        "uid" in meta
        and "resourceVersion" not in meta
        and "selfLink" not in meta
        and not key_order.holds_custom_resources(key)
    ):
        # As stored (uid and the fields before it are what stamped expects): put
        # in order (only a check, for what for_etcd wrote) and stamped, rather
        # than moving resourceVersion into place in a dict rebuilt for it.
        obj = key_order.built_in(obj)
        return _envelope(key, obj["metadata"], stamped(orjson.dumps(obj), revision), revision)
    meta["resourceVersion"] = str(revision)
    data = key_order.dumps(obj, custom=key_order.holds_custom_resources(key))
    return _envelope(key, meta, data, revision)


def from_etcd(key: str, value: bytes, revision: int) -> storage_pb2.Object:
    return envelope(key, stored(key, value), revision)
