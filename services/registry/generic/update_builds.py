"""What a PUT asks of the current object: its body put over the object's
server-owned metadata (kube's BeforeUpdate), or, written to a subresource, only
that subresource's part of it. Each is a `Build` for the update loop
(services/registry/generic/update.py).
"""

from __future__ import annotations

import copy
from typing import Any

from services.registry.generic.arguments import check_names
from services.registry.generic.codec import Codec
from services.registry.generic.scale import decode_scale, replicas_set
from services.registry.generic.update import Build, UpdatedObjectInfo

Obj = dict[str, Any]


def put_info(
    codec: Codec, namespace: str, name: str, body: bytes, subresource: str
) -> UpdatedObjectInfo:
    """What a PUT's body asks of the object (or of its subresource)."""
    r = codec.resource
    if subresource == "scale":
        assert r.scale is not None
        replicas, requested = decode_scale(r, body, namespace, name)
        return UpdatedObjectInfo(build=replicas_set(r.scale, replicas), resource_version=requested)
    obj, typed_ok = codec.decode(body)
    if subresource == "finalize":
        # Only the finalizers are taken, but kube's decoder reads all of it first.
        codec.check_types(obj, typed_ok)
    check_names(r, obj["metadata"], namespace, name)
    build: Build
    if subresource == "status":
        build = status_replacement(obj)
    elif subresource == "finalize":
        build = finalizers_replacement(obj)
    else:
        build = replacement(obj, namespace, name, namespaced=r.namespaced)
    requested = str(obj["metadata"].get("resourceVersion", ""))
    return UpdatedObjectInfo(build=build, resource_version=requested, size=len(body))


def replaced(obj: Obj, old: Obj, namespace: str, name: str, *, namespaced: bool) -> Obj:
    """What a write of obj makes of old before the strategy's turn: the
    server's own metadata (kube's BeforeUpdate) put back over what was sent."""
    new = dict(obj)
    new_meta = dict(obj["metadata"])
    new["metadata"] = new_meta
    new_meta["name"] = name
    if namespaced:
        new_meta["namespace"] = namespace
    else:
        new_meta.pop("namespace", None)
    old_meta = old.get("metadata", {})
    # The creation time is the server's, whatever was sent; a uid left out is
    # the old one (a different one is refused by validation).
    new_meta["creationTimestamp"] = old_meta.get("creationTimestamp")
    new_meta.setdefault("uid", old_meta.get("uid"))
    # An update never takes back a deletion under way, and the generation is
    # the strategy's to move.
    for field in ("deletionTimestamp", "deletionGracePeriodSeconds", "generation"):
        if field in old_meta:
            new_meta[field] = old_meta[field]
        else:
            new_meta.pop(field, None)
    return new


def replacement(obj: Obj, namespace: str, name: str, *, namespaced: bool) -> Build:
    """A PUT of obj: the object sent, over the current one's server-owned metadata."""
    return lambda old: replaced(obj, old, namespace, name, namespaced=namespaced)


def status_replacement(obj: Obj) -> Build:
    """A write of the status subresource: obj's status; everything else stays
    as it is (kube's ResetObjectMetaForStatus)."""

    def build(old: Obj) -> Obj:
        new = copy.deepcopy(old)
        new["status"] = obj.get("status") or {}
        return new

    return build


def finalizers_replacement(obj: Obj) -> Build:
    """A write of a namespace's finalize subresource: only spec.finalizers
    changes, to obj's."""

    def build(old: Obj) -> Obj:
        new = copy.deepcopy(old)
        finalizers = (obj.get("spec") or {}).get("finalizers") or []
        new.setdefault("spec", {})["finalizers"] = finalizers
        return new

    return build
