"""Between etcd values and storage envelopes, for what storage still decodes.

etcd holds an object's JSON without metadata.resourceVersion (kube's versioner
clears it on write); on the way out the revision is set into the JSON once, here,
so no layer above has to decode an object to learn or stamp its version. A write
that carries its envelope is not decoded at all (strata.storage.envelopes); one
without is decoded here and made final the same way.
"""

from __future__ import annotations

from typing import Any

import orjson

from strata.api import key_order
from strata.proto.storage.v1 import storage_pb2
from strata.storage import CorruptObject, InvalidObject, envelopes


def _decode(value: bytes) -> dict[str, Any] | None:
    try:
        obj = orjson.loads(value)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(obj, dict) or not isinstance(obj.get("metadata", {}), dict):
        return None
    return obj


def for_etcd(
    key: str, value: bytes, envelope: storage_pb2.Envelope | None = None
) -> envelopes.Final:
    """A write's value and envelope as storage keeps them. With an envelope the
    value is final already: it is only checked, never decoded. Without one it is
    decoded and made final here: resourceVersion removed, in kube's key order.
    InvalidObject when it is not an object (or the envelope does not fit it);
    ObjectTooLarge when the bytes are over etcd's limit."""
    if envelope is not None:
        envelopes.check_size(key, value)
        envelopes.check_place(key, value, envelope)
        return envelopes.Final(envelope, value)
    decoded = _decode(value)
    if decoded is None:
        raise InvalidObject(key, f"object for {key} is not a JSON object with metadata")
    return envelopes.final(key, decoded)


def stored(key: str, value: bytes) -> dict[str, Any]:
    """A value read from etcd as an object; CorruptObject when it is not one."""
    obj = _decode(value)
    if obj is None:
        raise CorruptObject(key, f"stored value at {key} is not a JSON object with metadata")
    return obj


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
        # As stored (uid and the fields before it are what built_in_place
        # expects): put in order (only a check, for what final wrote) and
        # stamped, rather than moving resourceVersion into place in a dict
        # rebuilt for it.
        obj = key_order.built_in(obj)
        data = orjson.dumps(obj)
        data = envelopes.stamped(data, envelopes.built_in_place(data), revision)
        return envelopes.object_of(key, data, envelopes.envelope_of(obj["metadata"]), revision)
    meta["resourceVersion"] = str(revision)
    data = key_order.dumps(obj, custom=key_order.holds_custom_resources(key))
    return envelopes.object_of(key, data, envelopes.envelope_of(meta), revision)


def from_etcd(key: str, value: bytes, revision: int) -> storage_pb2.Object:
    return envelope(key, stored(key, value), revision)
