"""apps/v1 Deployments: kube's defaults, spec and status validation, and the
generation rule (spec or annotation changes bump it, as the deployment
controller copies annotations down to its ReplicaSets).

strata runs no deployment controller; clients (or a controller of their own)
write status through the status subresource.

The Deployment's declaration (a `Resource`, with kube's columns and the
scale subresource) is here too; services/registry/builtin/resources.py gathers it.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from services.registry.builtin import kind_schemas
from services.registry.builtin.podtemplates import (
    TEMPLATE_TYPES,
    default_template,
    port_warnings,
    selector_empty,
    selector_string,
    validate_template_for_selector,
)
from services.registry.generic.declarations import (
    AGE_COLUMN,
    NAME_COLUMN,
    Column,
    Resource,
    ScaleRules,
)
from services.registry.generic.strategy import (
    Obj,
    next_generation,
    validate_label_selector,
    validate_object_meta,
    validate_object_meta_update,
)
from strata.api import gomarshal
from strata.api.causes import forbidden, immutable, invalid_value, required
from strata.api.errors import Cause
from strata.api.goquote import quote

RECREATE, ROLLING_UPDATE = "Recreate", "RollingUpdate"
NON_NEGATIVE = "must be greater than or equal to 0"
_PERCENT = re.compile(r"^[0-9]+%$")
_PERCENT_ERROR = (
    "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  "
    "or '93%', regex used for validation is '[0-9]+%')"
)

GO_TYPES = (
    ("spec", "Deployment", "v1.DeploymentSpec"),
    ("spec.replicas", "DeploymentSpec", "int32"),
    ("spec.selector", "DeploymentSpec", "v1.LabelSelector"),
    ("spec.selector.matchLabels", "LabelSelector", "map[string]string"),
    ("spec.selector.matchExpressions", "LabelSelector", "[]v1.LabelSelectorRequirement"),
    ("spec.minReadySeconds", "DeploymentSpec", "int32"),
    ("spec.revisionHistoryLimit", "DeploymentSpec", "int32"),
    ("spec.progressDeadlineSeconds", "DeploymentSpec", "int32"),
    ("spec.paused", "DeploymentSpec", "bool"),
    ("spec.strategy", "DeploymentSpec", "v1.DeploymentStrategy"),
    ("spec.strategy.type", "DeploymentStrategy", "string:v1.DeploymentStrategyType"),
    *((f"spec.{path}", struct, go_type) for path, struct, go_type in TEMPLATE_TYPES),
    ("status", "Deployment", "v1.DeploymentStatus"),
    *(
        (f"status.{field}", "DeploymentStatus", "int32")
        for field in (
            "replicas",
            "updatedReplicas",
            "readyReplicas",
            "availableReplicas",
            "unavailableReplicas",
        )
    ),
    ("status.observedGeneration", "DeploymentStatus", "int64"),
)


def _default(obj: Obj) -> None:
    """SetDefaults_Deployment."""
    spec = obj.setdefault("spec", {})
    spec.setdefault("replicas", 1)
    strategy = spec.setdefault("strategy", {})
    strategy.setdefault("type", ROLLING_UPDATE)
    if strategy["type"] == ROLLING_UPDATE:
        rolling = strategy.setdefault("rollingUpdate", {})
        rolling.setdefault("maxUnavailable", "25%")
        rolling.setdefault("maxSurge", "25%")
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("progressDeadlineSeconds", 600)
    default_template(spec.setdefault("template", {}))


def _int_or_percent(value: Any, field: str) -> tuple[list[Cause], float]:
    """ValidatePositiveIntOrPercent; the value as a number (a percent's number)."""
    if isinstance(value, str):
        if not _PERCENT.match(value):
            return [invalid_value(field, value, _PERCENT_ERROR)], 0
        return [], float(value[:-1])
    if isinstance(value, int) and not isinstance(value, bool):
        causes = [invalid_value(field, value, NON_NEGATIVE)] if value < 0 else []
        return causes, value
    return [invalid_value(field, value, "must be an integer or percentage (e.g '5%')")], 0


def _unsupported_strategy(strategy: Obj, field: str) -> Cause:
    """kube 1.36's NotSupported for a strategy of no known type: on the strategy
    itself, whose value is its internal Go struct as encoding/json writes it
    (field names capitalised; a rollingUpdate's IntOrStrings, 0 when left out)."""
    rolling = strategy.get("rollingUpdate")
    value: dict[str, Any] = {"Type": strategy.get("type", ""), "RollingUpdate": None}
    if isinstance(rolling, dict):
        value["RollingUpdate"] = {
            "MaxUnavailable": rolling.get("maxUnavailable", 0),
            "MaxSurge": rolling.get("maxSurge", 0),
        }
    printed = gomarshal.escaped(orjson.dumps(value)).decode()  # a struct: keys as declared
    supported = ", ".join(quote(v) for v in (RECREATE, ROLLING_UPDATE))
    message = f"Unsupported value: {printed}: supported values: {supported}"
    return Cause(reason="FieldValueNotSupported", message=message, field=field)


def _validate_strategy(strategy: Obj, field: str) -> list[Cause]:
    kind = strategy.get("type", "")
    rolling = strategy.get("rollingUpdate")
    if kind == RECREATE:
        if rolling is not None:
            detail = f"may not be specified when strategy `type` is '{RECREATE}'"
            return [forbidden(f"{field}.rollingUpdate", detail)]
        return []
    if kind != ROLLING_UPDATE:
        return [_unsupported_strategy(strategy, field)]
    if rolling is None:
        return [required(f"{field}.rollingUpdate", "this should be defaulted and never be nil")]
    at = f"{field}.rollingUpdate"
    unavailable = rolling.get("maxUnavailable", 0)
    surge = rolling.get("maxSurge", 0)
    causes, unavailable_n = _int_or_percent(unavailable, f"{at}.maxUnavailable")
    surge_causes, surge_n = _int_or_percent(surge, f"{at}.maxSurge")
    causes += surge_causes
    if not causes:
        if isinstance(unavailable, str) and unavailable_n > 100:
            detail = "must not be greater than 100%"
            causes.append(invalid_value(f"{at}.maxUnavailable", unavailable, detail))
        if unavailable_n == 0 and surge_n == 0:
            detail = "may not be 0 when `maxSurge` is 0"
            causes.append(invalid_value(f"{at}.maxUnavailable", unavailable, detail))
    return causes


def _non_negative(spec: Obj, field: str, prefix: str) -> list[Cause]:
    value = spec.get(field)
    if value is not None and value < 0:
        return [invalid_value(f"{prefix}.{field}", value, NON_NEGATIVE)]
    return []


def validate_spec(spec: Obj) -> list[Cause]:
    """ValidateDeploymentSpec for the fields strata checks."""
    causes = _non_negative(spec, "replicas", "spec")
    selector = spec.get("selector")
    selector_causes = []
    if selector is None:
        causes.append(required("spec.selector"))
    else:
        selector_causes = validate_label_selector(selector, "spec.selector")
        causes.extend(selector_causes)
        if selector_empty(selector):
            detail = "empty selector is invalid for deployment"
            causes.append(invalid_value("spec.selector", selector, detail))
    if selector_causes:
        causes.append(invalid_value("spec.selector", selector, "invalid label selector"))
    else:
        template = spec.get("template") or {}
        causes.extend(validate_template_for_selector(template, selector, "spec.template"))
    causes.extend(_validate_strategy(spec.get("strategy") or {}, "spec.strategy"))
    causes.extend(_non_negative(spec, "minReadySeconds", "spec"))
    causes.extend(_non_negative(spec, "revisionHistoryLimit", "spec"))
    causes.extend(_non_negative(spec, "progressDeadlineSeconds", "spec"))
    deadline = spec.get("progressDeadlineSeconds")
    if deadline is not None and deadline <= (spec.get("minReadySeconds") or 0):
        detail = "must be greater than minReadySeconds"
        causes.append(invalid_value("spec.progressDeadlineSeconds", deadline, detail))
    return causes


def validate_status(status: Obj) -> list[Cause]:
    """ValidateDeploymentStatus."""
    causes: list[Cause] = []
    for field in (
        "observedGeneration",
        "replicas",
        "updatedReplicas",
        "readyReplicas",
        "availableReplicas",
        "unavailableReplicas",
    ):
        causes.extend(_non_negative(status, field, "status"))
    replicas = status.get("replicas") or 0
    for field in ("updatedReplicas", "readyReplicas", "availableReplicas"):
        if (status.get(field) or 0) > replicas:
            detail = "cannot be greater than status.replicas"
            causes.append(invalid_value(f"status.{field}", status[field], detail))
    available = status.get("availableReplicas") or 0
    if available > (status.get("readyReplicas") or 0):
        detail = "cannot be greater than readyReplicas"
        causes.append(invalid_value("status.availableReplicas", available, detail))
    return causes


class DeploymentStrategy:
    go_types = GO_TYPES
    namespaced = True

    def prepare_for_create(self, obj: Obj) -> None:
        _default(obj)
        obj["status"] = {}
        obj["metadata"]["generation"] = 1

    def validate(self, obj: Obj) -> list[Cause]:
        causes = validate_object_meta(obj, namespaced=True, name_is_label=False)
        return causes + validate_spec(obj.get("spec") or {})

    def prepare_for_update(self, obj: Obj, old: Obj) -> None:
        _default(obj)
        obj["status"] = old.get("status", {})
        annotations = (obj["metadata"].get("annotations"), old["metadata"].get("annotations"))
        next_generation(
            obj, old, obj.get("spec") != old.get("spec") or annotations[0] != annotations[1]
        )

    def validate_update(self, obj: Obj, old: Obj) -> list[Cause]:
        causes = validate_object_meta_update(obj, old) + self.validate(obj)
        selector = (obj.get("spec") or {}).get("selector")
        if selector != (old.get("spec") or {}).get("selector"):
            causes.append(immutable("spec.selector", selector))
        return causes

    def warnings_on_create(self, obj: Obj) -> list[str]:
        return port_warnings((obj.get("spec") or {}).get("template") or {}, "spec.template")

    def warnings_on_update(self, obj: Obj, old: Obj) -> list[str]:
        template = (obj.get("spec") or {}).get("template") or {}
        if template == (old.get("spec") or {}).get("template"):
            return []
        return port_warnings(template, "spec.template")

    def validate_status_update(self, obj: Obj, old: Obj) -> list[Cause]:
        return validate_object_meta_update(obj, old) + validate_status(obj.get("status") or {})


def scale_selector(obj: Obj) -> str:
    """A Deployment's Scale status.selector: its spec.selector as a string."""
    return selector_string((obj.get("spec") or {}).get("selector"))


def _replicas_ready(obj: Obj) -> str:
    """A Deployment's Ready cell: ready of desired replicas."""
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    return f"{status.get('readyReplicas', 0)}/{spec.get('replicas', 0)}"


def _containers(obj: Obj, field: str) -> str:
    template_spec = ((obj.get("spec") or {}).get("template") or {}).get("spec") or {}
    return ",".join(str(c.get(field, "")) for c in template_spec.get("containers") or [])


_DEPLOYMENT_STRATEGY = DeploymentStrategy()
DEPLOYMENTS = Resource(
    schema=kind_schemas.DEPLOYMENT,
    group="apps",
    version="v1",
    name="deployments",
    singular="deployment",
    kind="Deployment",
    namespaced=True,
    strategy=_DEPLOYMENT_STRATEGY,
    status=_DEPLOYMENT_STRATEGY,
    scale=ScaleRules(selector=scale_selector),
    short_names=("deploy",),
    categories=("all",),
    columns=(
        NAME_COLUMN,
        Column(
            name="Ready",
            type="string",
            description="Number of the pod with ready state",
            cell=_replicas_ready,
        ),
        Column(
            name="Up-to-date",
            type="integer",
            description="Total number of non-terminated pods targeted by this deployment that "
            "have the desired template spec.",
            cell=lambda obj: (obj.get("status") or {}).get("updatedReplicas", 0),
        ),
        Column(
            name="Available",
            type="integer",
            description="Total number of available pods (ready for at least minReadySeconds) "
            "targeted by this deployment.",
            cell=lambda obj: (obj.get("status") or {}).get("availableReplicas", 0),
        ),
        AGE_COLUMN,
        Column(
            name="Containers",
            type="string",
            priority=1,
            description="Names of each container in the template.",
            cell=lambda obj: _containers(obj, "name"),
        ),
        Column(
            name="Images",
            type="string",
            priority=1,
            description="Images referenced by each container in the template.",
            cell=lambda obj: _containers(obj, "image"),
        ),
        Column(
            name="Selector",
            type="string",
            priority=1,
            description="Label selector for pods. Existing ReplicaSets whose pods are selected "
            "by this will be the ones affected by this deployment.",
            cell=scale_selector,
        ),
    ),
)
