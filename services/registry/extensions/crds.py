"""CustomResourceDefinitions (apiextensions.k8s.io/v1): their defaults and field
rules as kube's apiextensions-apiserver has them, their status (accepted names,
conditions, stored versions) and what the rest of the registry reads from one.

The CRD's own declaration (a `Resource`) is here too;
services/registry/builtin/resources.py gathers it.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

from services.registry.builtin import kind_schemas
from services.registry.extensions import jsonpath
from services.registry.extensions.schema_structure import schema_causes
from services.registry.generic.declarations import CREATED_AT_COLUMN, NAME_COLUMN, Resource
from services.registry.generic.strategy import (
    Obj,
    next_generation,
    validate_object_meta,
    validate_object_meta_update,
)
from strata.api import meta, names
from strata.api.causes import immutable, invalid_value, not_supported, required
from strata.api.errors import Cause

GROUP = "apiextensions.k8s.io"
# Held by a CRD being deleted until its custom resources are gone.
CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"
NAMES_ACCEPTED = "NamesAccepted"
ESTABLISHED = "Established"
TERMINATING = "Terminating"
SCOPES = ("Cluster", "Namespaced")
COLUMN_TYPES = ("boolean", "date", "integer", "number", "string")
COLUMN_FORMATS = ("byte", "date", "date-time", "double", "float", "int32", "int64", "password")


# --- reading a CRD ------------------------------------------------------------


def spec(crd: Obj) -> Obj:
    value: Obj = crd.get("spec") or {}
    return value


def versions(crd: Obj) -> list[Obj]:
    return [v for v in spec(crd).get("versions") or [] if isinstance(v, dict)]


def storage_version(crd: Obj) -> str:
    return next((str(v.get("name")) for v in versions(crd) if v.get("storage")), "")


def condition(crd: Obj, kind: str) -> Obj | None:
    conditions = (crd.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c.get("type") == kind), None)


def condition_true(crd: Obj, kind: str) -> bool:
    found = condition(crd, kind)
    return found is not None and found.get("status") == "True"


def set_condition(crd: Obj, kind: str, status: str, reason: str, message: str) -> None:
    """Set a condition, its lastTransitionTime moving only when its status does."""
    conditions: list[Obj] = crd.setdefault("status", {}).setdefault("conditions", []) or []
    crd["status"]["conditions"] = conditions
    old = next((c for c in conditions if c.get("type") == kind), None)
    new = {
        "type": kind,
        "status": status,
        "lastTransitionTime": meta.now_rfc3339(),
        "reason": reason,
        "message": message,
    }
    if old is None:
        conditions.append(new)
        return
    if old.get("status") == status:
        new["lastTransitionTime"] = old.get("lastTransitionTime", new["lastTransitionTime"])
    old.update(new)


# --- the strategy ---------------------------------------------------------------


def _set_defaults(crd: Obj) -> None:
    """kube's v1 defaulting of a CRD."""
    crd_spec = crd.get("spec")
    if not isinstance(crd_spec, dict):
        return
    crd_names = crd_spec.get("names")
    if isinstance(crd_names, dict) and isinstance(kind := crd_names.get("kind"), str) and kind:
        crd_names.setdefault("singular", kind.lower())
        crd_names.setdefault("listKind", f"{kind}List")
    crd_spec.setdefault("conversion", {"strategy": "None"})


def _name_errors(crd: Obj) -> list[str]:
    names_ = spec(crd).get("names") or {}
    wanted = f"{names_.get('plural', '')}.{spec(crd).get('group', '')}"
    errors_ = names.dns1123_subdomain_errors(str((crd.get("metadata") or {}).get("name", "")))
    if (crd.get("metadata") or {}).get("name") != wanted:
        errors_.append('must be spec.names.plural+"."+spec.group')
    return errors_


def _dns1035(value: Any, field: str, *, mixed_case: bool = False) -> Iterator[Cause]:
    text = str(value)
    found = names.dns1035_label_errors(text.lower() if mixed_case else text)
    if found:
        detail = ",".join(found)
        if mixed_case:
            detail = f"may have mixed case, but should otherwise match: {detail}"
        yield invalid_value(field, value, detail)


def names_causes(crd_names: Obj, at: str) -> Iterator[Cause]:
    """kube's ValidateCustomResourceDefinitionNames (spec.names and acceptedNames)."""
    for field in ("plural", "singular"):
        if crd_names.get(field):
            yield from _dns1035(crd_names[field], f"{at}.{field}")
    for field in ("kind", "listKind"):
        if crd_names.get(field):
            yield from _dns1035(crd_names[field], f"{at}.{field}", mixed_case=True)
    for i, short in enumerate(crd_names.get("shortNames") or []):
        yield from _dns1035(short, f"{at}.shortNames[{i}]")
    if crd_names.get("kind") and crd_names.get("kind") == crd_names.get("listKind"):
        yield invalid_value(
            f"{at}.listKind", crd_names["listKind"], "kind and listKind may not be the same"
        )
    for i, category in enumerate(crd_names.get("categories") or []):
        yield from _dns1035(category, f"{at}.categories[{i}]")


def _spec_causes(crd: Obj) -> Iterator[Cause]:
    crd_spec = spec(crd)
    group = crd_spec.get("group", "")
    if not group:
        yield required("spec.group")
    elif found := names.dns1123_subdomain_errors(str(group)):
        yield invalid_value("spec.group", group, ",".join(found))
    elif "." not in group:
        yield invalid_value("spec.group", group, "should be a domain with at least one dot")
    scope = crd_spec.get("scope", "")
    if not scope:
        yield required("spec.scope")
    elif scope not in SCOPES:
        yield not_supported("spec.scope", scope, SCOPES)
    crd_names = crd_spec.get("names") or {}
    for field in ("plural", "singular", "kind", "listKind"):
        if not crd_names.get(field):
            yield required(f"spec.names.{field}")
    yield from names_causes(crd_names, "spec.names")
    yield from _versions_causes(crd_spec.get("versions") or [])
    conversion = (crd_spec.get("conversion") or {}).get("strategy", "None")
    if conversion != "None":
        yield not_supported("spec.conversion.strategy", conversion, ("None",))
    if crd_spec.get("preserveUnknownFields"):
        yield invalid_value(
            "spec.preserveUnknownFields",
            True,
            "cannot set to true, set x-kubernetes-preserve-"
            "unknown-fields to true in spec.versions[*].schema instead",
        )


def _versions_causes(crd_versions: list[Any]) -> Iterator[Cause]:
    seen: set[str] = set()
    duplicated = False
    for i, version in enumerate(crd_versions):
        at = f"spec.versions[{i}]"
        if not isinstance(version, dict):
            yield invalid_value(at, version, "must be an object")
            continue
        name = str(version.get("name", ""))
        duplicated |= name in seen
        seen.add(name)
        yield from _dns1035(name, f"{at}.name")
        schema = (version.get("schema") or {}).get("openAPIV3Schema")
        if schema is None:
            yield required(f"{at}.schema.openAPIV3Schema", "schemas are required")
        else:
            yield from schema_causes(schema, f"{at}.schema.openAPIV3Schema")
        yield from _subresources_causes(version.get("subresources") or {}, f"{at}.subresources")
        for j, column in enumerate(version.get("additionalPrinterColumns") or []):
            yield from _column_causes(column, f"{at}.additionalPrinterColumns[{j}]")
    if duplicated:
        yield invalid_value("spec.versions", crd_versions, "must contain unique version names")
    if sum(bool(isinstance(v, dict) and v.get("storage")) for v in crd_versions) != 1:
        yield invalid_value(
            "spec.versions", crd_versions, "must have exactly one version marked as storage version"
        )


def _subresources_causes(subresources: Obj, at: str) -> Iterator[Cause]:
    scale = subresources.get("scale")
    if not isinstance(scale, dict):
        return
    for field, under in (
        ("specReplicasPath", (".spec.",)),
        ("statusReplicasPath", (".status.",)),
        ("labelSelectorPath", (".spec.", ".status.")),
    ):
        path = scale.get(field)
        if not path:
            if field != "labelSelectorPath":
                yield required(f"{at}.scale.{field}")
            continue
        if not str(path).startswith(under) or not simple_path(str(path)):
            where = " or ".join(u.rstrip(".") for u in under)
            many = "either " if len(under) > 1 else ""
            yield invalid_value(
                f"{at}.scale.{field}", path, f"should be a json path under {many}{where}"
            )


def simple_path(path: str) -> bool:
    """A dotted path of plain field names (scale's paths)."""
    return all(part and "[" not in part for part in path.split(".")[1:])


def _column_causes(column: Any, at: str) -> Iterator[Cause]:
    if not isinstance(column, dict):
        yield invalid_value(at, column, "must be an object")
        return
    if not column.get("name"):
        yield required(f"{at}.name")
    kind = column.get("type", "")
    if not kind:
        yield required(f"{at}.type")
    elif kind not in COLUMN_TYPES:
        yield not_supported(f"{at}.type", kind, COLUMN_TYPES)
    if (fmt := column.get("format")) and fmt not in COLUMN_FORMATS:
        yield not_supported(f"{at}.format", fmt, COLUMN_FORMATS)
    path = column.get("jsonPath", "")
    if not path:
        yield required(f"{at}.jsonPath")
    else:
        try:
            jsonpath.parse(str(path))
        except jsonpath.JSONPathError:
            yield invalid_value(f"{at}.jsonPath", path, "must be a simple json path")


def _status_causes(crd: Obj) -> Iterator[Cause]:
    accepted = (crd.get("status") or {}).get("acceptedNames") or {}
    yield from names_causes(accepted, "status.acceptedNames")


class CRDStrategy:
    namespaced = False

    def prepare_for_create(self, obj: Obj) -> None:
        _set_defaults(obj)
        obj["metadata"]["generation"] = 1
        status: Obj = {"acceptedNames": {"plural": "", "kind": ""}}
        if stored := storage_version(obj):
            status["storedVersions"] = [stored]
        obj["status"] = status

    def validate(self, obj: Obj) -> list[Cause]:
        causes = validate_object_meta(
            obj, namespaced=False, name_is_label=False, name_errors=lambda _: _name_errors(obj)
        )
        return causes + list(_spec_causes(obj)) + list(_status_causes(obj))

    def prepare_for_update(self, obj: Obj, old: Obj) -> None:
        _set_defaults(obj)
        status = copy.deepcopy(old.get("status") or {})
        stored: list[str] = status.setdefault("storedVersions", [])
        if (version := storage_version(obj)) and version not in stored:
            stored.append(version)
        obj["status"] = status
        next_generation(obj, old, obj.get("spec") != old.get("spec"))

    def validate_update(self, obj: Obj, old: Obj) -> list[Cause]:
        causes = self.validate(obj) + validate_object_meta_update(obj, old)
        new_spec, old_spec = spec(obj), spec(old)
        changed = [("spec.group", new_spec.get("group"), old_spec.get("group"))]
        new_names, old_names = new_spec.get("names") or {}, old_spec.get("names") or {}
        changed.append(("spec.names.plural", new_names.get("plural"), old_names.get("plural")))
        if condition_true(old, ESTABLISHED):
            changed.append(("spec.scope", new_spec.get("scope"), old_spec.get("scope")))
            changed.append(("spec.names.kind", new_names.get("kind"), old_names.get("kind")))
        causes += [immutable(field, new) for field, new, was in changed if new != was]
        return causes + list(_stored_versions_causes(obj))

    def validate_status_update(self, obj: Obj, old: Obj) -> list[Cause]:
        return validate_object_meta_update(obj, old) + list(_status_causes(obj))


def _stored_versions_causes(crd: Obj) -> Iterator[Cause]:
    served = {v.get("name") for v in versions(crd)}
    for i, version in enumerate((crd.get("status") or {}).get("storedVersions") or []):
        if version not in served:
            at = f"status.storedVersions[{i}]"
            yield invalid_value(at, version, "must appear in spec.versions")


def mark_terminating(crd: Obj) -> None:
    """What deleting a CRD does beyond marking it (kube's CRD REST Delete)."""
    set_condition(
        crd,
        TERMINATING,
        "True",
        "InstanceDeletionPending",
        "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
    )


_CRD_STRATEGY = CRDStrategy()
CUSTOM_RESOURCE_DEFINITIONS = Resource(
    schema=kind_schemas.CUSTOM_RESOURCE_DEFINITION,
    group=GROUP,
    version="v1",
    name="customresourcedefinitions",
    singular="customresourcedefinition",
    kind="CustomResourceDefinition",
    namespaced=False,
    strategy=_CRD_STRATEGY,
    status=_CRD_STRATEGY,
    short_names=("crd", "crds"),
    categories=("api-extensions",),
    columns=(NAME_COLUMN, CREATED_AT_COLUMN),
    deletion_finalizer=CLEANUP_FINALIZER,
    on_delete=mark_terminating,
    # kube's CRD registry marks a CRD without propagationPolicy's finalizers.
    garbage_collected=False,
)
