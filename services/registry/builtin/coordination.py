"""coordination.k8s.io/v1 Leases: what leader election and heartbeats write.

Only the shape of the spec is checked, as kube does: a positive duration and
a non-negative transition count; the holder and times are the clients' own.

The Lease's declaration (a `Resource`) is here too;
services/registry/builtin/resources.py gathers it.
"""

from __future__ import annotations

from typing import Any

from services.registry.builtin import kind_schemas
from services.registry.generic.declarations import AGE_COLUMN, NAME_COLUMN, Column, Resource
from services.registry.generic.strategy import (
    Obj,
    validate_object_meta,
    validate_object_meta_update,
)
from strata.api.causes import invalid_value
from strata.api.errors import Cause

GO_TYPES = (
    ("spec", "Lease", "v1.LeaseSpec"),
    ("spec.holderIdentity", "LeaseSpec", "string"),
    ("spec.leaseDurationSeconds", "LeaseSpec", "int32"),
    ("spec.leaseTransitions", "LeaseSpec", "int32"),
)


def _spec(obj: Obj) -> dict[str, Any]:
    """The spec, its fields typed as kube's decoder would insist (400, raised
    before any field cause is returned)."""
    spec: dict[str, Any] = obj.get("spec") or {}
    return spec


class LeaseStrategy:
    go_types = GO_TYPES
    namespaced = True

    def prepare_for_create(self, obj: Obj) -> None:
        pass

    def validate(self, obj: Obj) -> list[Cause]:
        causes = validate_object_meta(obj, namespaced=True, name_is_label=False)
        spec = _spec(obj)
        duration = spec.get("leaseDurationSeconds")
        if duration is not None and duration <= 0:
            causes.append(
                invalid_value("spec.leaseDurationSeconds", duration, "must be greater than 0")
            )
        transitions = spec.get("leaseTransitions")
        if transitions is not None and transitions < 0:
            causes.append(
                invalid_value(
                    "spec.leaseTransitions", transitions, "must be greater than or equal to 0"
                )
            )
        return causes

    def prepare_for_update(self, obj: Obj, old: Obj) -> None:
        pass

    def validate_update(self, obj: Obj, old: Obj) -> list[Cause]:
        return validate_object_meta_update(obj, old) + self.validate(obj)


LEASES = Resource(
    schema=kind_schemas.LEASE,
    group="coordination.k8s.io",
    version="v1",
    name="leases",
    singular="lease",
    kind="Lease",
    namespaced=True,
    strategy=LeaseStrategy(),
    columns=(
        NAME_COLUMN,
        Column(name="Holder", type="string", description="", path="spec.holderIdentity"),
        AGE_COLUMN,
    ),
)
