"""Custom resources: the catalog entry and strategy a CRD makes for each of its
served versions (kube's customresource registry). Objects are pruned to their
version's schema and defaulted as they are decoded, validated against it, and
stored at the CRD's storage version."""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import Any

import orjson

from services.registry.extensions import crds, jsonpath
from services.registry.generic import schema
from services.registry.generic.declarations import (
    AGE_COLUMN,
    NAME_COLUMN,
    Column,
    Resource,
    ScaleRules,
)
from services.registry.generic.strategy import (
    Obj,
    lookup,
    next_generation,
    validate_object_meta,
    validate_object_meta_update,
)
from strata.api import meta
from strata.api.errors import Cause, StatusError

VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


# eq=False: compared and hashed as itself (its schema is a dict).
@dataclass(kw_only=True, eq=False)
class CustomResourceStrategy:
    namespaced: bool
    group: str
    plural: str
    schema: schema.Schema
    status_subresource: bool
    # The CRD is being deleted: its resources can be read and deleted, not created.
    terminating: bool

    def prepare_for_create(self, obj: Obj) -> None:
        if self.terminating:
            raise StatusError(
                code=405,
                reason="MethodNotAllowed",
                message="create not allowed while custom resource definition is terminating",
                details={"group": self.group, "kind": self.plural},
            )
        if self.status_subresource:
            obj.pop("status", None)
        obj["metadata"]["generation"] = 1

    def validate(self, obj: Obj) -> list[Cause]:
        causes = validate_object_meta(obj, namespaced=self.namespaced, name_is_label=False)
        return causes + schema.validate(obj, self.schema)

    def prepare_for_update(self, obj: Obj, old: Obj) -> None:
        if self.status_subresource:
            if "status" in old:
                obj["status"] = old["status"]
            else:
                obj.pop("status", None)
        next_generation(obj, old, self._counted(obj) != self._counted(old))

    def _counted(self, obj: Obj) -> Obj:
        """What the generation counts: everything but metadata (and status, when
        the status subresource writes it)."""
        left_out = ("metadata", "status") if self.status_subresource else ("metadata",)
        return {k: v for k, v in obj.items() if k not in left_out}

    def validate_update(self, obj: Obj, old: Obj) -> list[Cause]:
        return validate_object_meta_update(obj, old) + self.validate(obj)

    def validate_status_update(self, obj: Obj, old: Obj) -> list[Cause]:
        return validate_object_meta_update(obj, old) + schema.validate(obj, self.schema)


def _printed(value: Any) -> str:
    """A value in a string column, as client-go's jsonpath prints it."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(int(value)) if float(value).is_integer() else repr(value)
    return orjson.dumps(value).decode()


def _typed_cell(kind: str, value: Any) -> Any:
    """kube's cellForJSONValue: a cell of the column's type, or null."""
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if kind == "string":
        return _printed(value)
    if kind == "integer" and number:
        return int(value)
    if kind == "number" and number:
        return float(value)
    if kind == "boolean" and isinstance(value, bool):
        return value
    if kind == "date" and isinstance(value, str):
        try:
            return meta.age(value)
        except ValueError:
            return "<invalid>"
    return None


def _column_cell(steps: list[Any], kind: str, obj: Obj) -> Any:
    found = jsonpath.find(obj, steps)
    return _typed_cell(kind, found[0]) if found and found[0] is not None else None


def _columns(version: Obj) -> tuple[Column, ...]:
    declared = version.get("additionalPrinterColumns") or []
    if not declared:
        # kube's default when a CRD declares none.
        return (NAME_COLUMN, dataclasses.replace(AGE_COLUMN, type="date"))
    columns = [NAME_COLUMN]
    for c in declared:
        path = str(c["jsonPath"])
        columns.append(
            Column(
                name=str(c["name"]),
                type=str(c["type"]),
                format=str(c.get("format", "")),
                priority=int(c.get("priority", 0)),
                description=str(
                    c.get("description")
                    or f"Custom resource definition column (in JSONPath format): {path}"
                ),
                cell=functools.partial(_column_cell, jsonpath.parse(path), str(c["type"])),
            )
        )
    return tuple(columns)


def _scale(version: Obj) -> ScaleRules | None:
    rules = (version.get("subresources") or {}).get("scale")
    if not isinstance(rules, dict):
        return None
    selector_path = str(rules.get("labelSelectorPath") or "").lstrip(".")

    def selector(obj: Obj) -> str:
        return str(lookup(obj, selector_path) or "") if selector_path else ""

    return ScaleRules(
        spec_replicas=str(rules["specReplicasPath"]).lstrip("."),
        status_replicas=str(rules["statusReplicasPath"]).lstrip("."),
        selector=selector,
    )


def served(crd: Obj) -> bool:
    """Whether a CRD's resources are served: once it is Established."""
    return crds.condition_true(crd, crds.ESTABLISHED)


def resources_of(crd: Obj) -> list[Resource]:
    """The catalog entries of a CRD's served versions, under its accepted names."""
    spec = crds.spec(crd)
    accepted = (crd.get("status") or {}).get("acceptedNames") or {}
    group, plural = str(spec.get("group", "")), str(accepted.get("plural", ""))
    storage = crds.storage_version(crd)
    terminating = bool((crd.get("metadata") or {}).get("deletionTimestamp"))
    resources = []
    for version in crds.versions(crd):
        if not version.get("served"):
            continue
        name = str(version["name"])
        version_schema: schema.Schema = (version.get("schema") or {}).get("openAPIV3Schema") or {}
        status_subresource = "status" in (version.get("subresources") or {})
        strategy = CustomResourceStrategy(
            namespaced=spec.get("scope") == "Namespaced",
            group=group,
            plural=plural,
            schema=version_schema,
            status_subresource=status_subresource,
            terminating=terminating,
        )
        resources.append(
            Resource(
                group=group,
                version=name,
                name=plural,
                singular=str(accepted.get("singular", "")),
                kind=str(accepted.get("kind", "")),
                list_kind=str(accepted.get("listKind", "")),
                namespaced=strategy.namespaced,
                strategy=strategy,
                status=strategy if status_subresource else None,
                scale=_scale(version),
                short_names=tuple(accepted.get("shortNames") or ()),
                categories=tuple(accepted.get("categories") or ()),
                verbs=VERBS,
                columns=_columns(version),
                custom=True,
                storage_version=storage if storage != name else "",
                normalize=functools.partial(schema.default, schema=version_schema),
                schema=version_schema,
            )
        )
    return resources
