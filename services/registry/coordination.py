"""coordination.k8s.io/v1 Leases: what leader election and heartbeats write.

Only the shape of the spec is checked, as kube does: a positive duration and
a non-negative transition count; the holder and times are the clients' own.
"""

from __future__ import annotations

from typing import Any

from services.registry.strategy import (
    Obj,
    validate_object_meta,
    validate_object_meta_update,
)
from strata.api import errors
from strata.api.causes import invalid_value
from strata.api.errors import Cause

_INT32 = ("leaseDurationSeconds", "leaseTransitions")


def _spec(obj: Obj) -> dict[str, Any]:
    """The spec, its integer fields typed as kube's decoder would insist (400,
    raised before any field cause is returned)."""
    spec = obj.get("spec") or {}
    for field in _INT32:
        value = spec.get(field)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
            kind = "string" if isinstance(value, str) else type(value).__name__
            raise errors.bad_request(
                'Lease in version "v1" cannot be handled as a Lease: json: cannot unmarshal '
                f"{kind} into Go struct field LeaseSpec.spec.{field} of type int32"
            )
    return spec


class LeaseStrategy:
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
