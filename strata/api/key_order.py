"""The order of an object's keys as kube-apiserver writes them, for every layer
that writes an object: storage (what etcd keeps and every read, list and watch
answers) and the registry (answers that never reach storage: dry runs).

kube writes a built-in object from its Go struct: TypeMeta's kind and
apiVersion, then metadata, whose fields come in ObjectMeta's order, then the
kind's own fields. A custom resource is an unstructured map, which Go's encoder
writes with its keys sorted at every level (apiVersion, kind, metadata with
creationTimestamp first, ...). Clients that compare bytes tell the two apart,
so strata writes each as kube does.
"""

from __future__ import annotations

from typing import Any

import orjson

Obj = dict[str, Any]

_LEADING = ("kind", "apiVersion", "metadata")
OBJECT_META = (
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
)
_META_RANK = {name: rank for rank, name in enumerate(OBJECT_META)}
_UNKNOWN_RANK = len(OBJECT_META)
# Built-in groups whose resources kube keeps under "/<group>/<resource>/", as
# custom resources are kept: every other such key holds custom resources.
_BUILT_IN_UNDER_GROUP = frozenset({"apiextensions.k8s.io", "apiregistration.k8s.io"})


def in_order(obj: Obj) -> bool:
    """Whether obj is already as built_in writes it (as every object storage
    wrote is when read back): a check of its first keys and metadata's, much
    cheaper than building both dicts again."""
    keys = iter(obj)
    for name in _LEADING:
        if name in obj and next(keys) != name:
            return False
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        last = 0
        for name in meta:
            rank = _META_RANK.get(name, _UNKNOWN_RANK)
            if rank < last:
                return False
            last = rank
    return True


def built_in(obj: Obj) -> Obj:
    """obj with kind, apiVersion and metadata leading and metadata's fields in
    ObjectMeta's order (the rest as they were)."""
    if in_order(obj):
        return obj
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        ordered_meta = {k: meta[k] for k in OBJECT_META if k in meta}
        ordered_meta.update(meta)
        obj["metadata"] = ordered_meta
    ordered = {k: obj[k] for k in _LEADING if k in obj}
    ordered.update(obj)
    return ordered


def dumps(obj: Obj, *, custom: bool) -> bytes:
    """obj's JSON as kube writes it: a custom resource's keys sorted at every
    level, a built-in object's in its struct's order."""
    if custom:
        return orjson.dumps(obj, option=orjson.OPT_SORT_KEYS)
    return orjson.dumps(built_in(obj))


def holds_custom_resources(key: str) -> bool:
    """Whether a storage key is a custom resource's: "/<group>/<resource>/...",
    its group's dot telling it from "/<resource>/...", and not one of the
    built-in groups kept so."""
    first = key.split("/", 2)[1] if key.startswith("/") else ""
    return "." in first and first not in _BUILT_IN_UNDER_GROUP
