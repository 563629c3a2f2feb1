"""The scale subresource: a resource's autoscaling/v1 Scale read from its
object, a Scale body decoded, and the update a Scale makes (kube's
scaleFromDeployment and its scale REST). Where a resource keeps its replicas and
selector is its declaration's `ScaleRules`."""

from __future__ import annotations

import copy
from typing import Any

import orjson

from services.registry.generic.arguments import check_names
from services.registry.generic.declarations import Resource, ScaleRules
from services.registry.generic.strategy import assign, check_decodable, lookup
from services.registry.generic.update import Build
from strata.api import errors
from strata.api.causes import invalid_value

Obj = dict[str, Any]


def scale_of(rules: ScaleRules, obj: Obj) -> Obj:
    """The autoscaling/v1 Scale of an object."""
    metadata = obj.get("metadata") or {}
    status: Obj = {"replicas": lookup(obj, rules.status_replicas) or 0}
    if selector := rules.selector(obj):
        status["selector"] = selector
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            k: metadata[k]
            for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
            if k in metadata
        },
        "spec": {"replicas": lookup(obj, rules.spec_replicas) or 0},
        "status": status,
    }


def scaled(resource: Resource, value: bytes) -> bytes:
    """The Scale of a served object's JSON, as JSON."""
    assert resource.scale is not None
    return orjson.dumps(scale_of(resource.scale, orjson.loads(value)))


# The Scale's fields as kube's decoder reads them: one of another JSON type is
# its 400 (a spec of true was a 500 here).
_SCALE_TYPES = (
    ("metadata", "Scale", "v1.ObjectMeta"),
    ("spec", "Scale", "v1.ScaleSpec"),
    ("status", "Scale", "v1.ScaleStatus"),
    ("spec.replicas", "ScaleSpec", "int32"),
    ("status.replicas", "ScaleStatus", "int32"),
    ("status.selector", "ScaleStatus", "string"),
)


def decode_scale(resource: Resource, body: bytes, namespace: str, name: str) -> tuple[int, str]:
    """The replicas a Scale body asks for and the resourceVersion it names;
    a Scale that is not one is 400, a negative count 422 (Scale.autoscaling)."""
    try:
        scale = orjson.loads(body)
    except orjson.JSONDecodeError as e:
        raise errors.bad_request(f"the object provided is not valid JSON: {e}") from None
    if not isinstance(scale, dict):
        raise errors.bad_request("the object provided is not a Scale")
    if (
        scale.setdefault("kind", "Scale"),
        scale.setdefault("apiVersion", "autoscaling/v1"),
    ) != (
        "Scale",
        "autoscaling/v1",
    ):
        raise errors.bad_request(
            f"the kind in the data ({scale['kind']}, {scale['apiVersion']}) does not match "
            "the expected kind (Scale, autoscaling/v1)"
        )
    check_decodable(scale, "Scale", "v1", _SCALE_TYPES)
    metadata = scale.get("metadata") or {}
    check_names(resource, metadata, namespace, name)
    replicas: int = (scale.get("spec") or {}).get("replicas", 0)
    if replicas < 0:
        cause = invalid_value("spec.replicas", replicas, "must be greater than or equal to 0")
        raise errors.invalid("Scale", name, [cause], "autoscaling")
    return replicas, str(metadata.get("resourceVersion") or "")


def replicas_set(rules: ScaleRules, replicas: int) -> Build:
    """What a Scale write makes of the object: its replicas, nothing else."""

    def build(old: Obj) -> Obj:
        new = copy.deepcopy(old)
        assign(new, rules.spec_replicas, replicas)
        return new

    return build
