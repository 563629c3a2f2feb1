"""core/v1 Namespaces, ConfigMaps, Secrets and ServiceAccounts: their
declarations, and the strategies of those whose rules live nowhere else
(Secrets' and ServiceAccounts' are in services/registry/builtin/secrets.py).
"""

from __future__ import annotations

from typing import Any

from services.registry.builtin import kind_schemas
from services.registry.builtin.secrets import SecretStrategy, ServiceAccountStrategy
from services.registry.generic.declarations import (
    AGE_COLUMN,
    NAME_COLUMN,
    Column,
    Resource,
    count_of,
)
from services.registry.generic.strategy import (
    Obj,
    config_key_causes,
    immutable_when_set,
    validate_object_meta,
    validate_object_meta_update,
)
from strata.api import base64data, errors
from strata.api.causes import invalid_value, too_long
from strata.api.errors import Cause

# kube's NamespaceLifecycle keeps these whatever a client asks.
IMMORTAL_NAMESPACES = frozenset({"default", "kube-system", "kube-public"})


class NamespaceStrategy:
    namespaced = False
    # For check_decodable: a finalizer of another JSON type is kube's 400.
    go_types = (
        ("spec", "Namespace", "v1.NamespaceSpec"),
        ("spec.finalizers", "NamespaceSpec", "[]v1.FinalizerName"),
        ("spec.finalizers[]", "NamespaceSpec", "string:v1.FinalizerName"),
        ("status", "Namespace", "v1.NamespaceStatus"),
        ("status.phase", "NamespaceStatus", "string:v1.NamespacePhase"),
    )

    def deletion_refused(self, name: str) -> str:
        return "this namespace may not be deleted" if name in IMMORTAL_NAMESPACES else ""

    def prepare_for_create(self, obj: Obj) -> None:
        meta = obj["metadata"]
        # kube's NamespaceLifecycle labels every namespace with its own name.
        meta.setdefault("labels", {})["kubernetes.io/metadata.name"] = meta.get("name", "")
        spec = obj.setdefault("spec", {})
        spec["finalizers"] = ["kubernetes"]
        obj["status"] = {"phase": "Active"}

    def validate(self, obj: Obj) -> list[Cause]:
        return validate_object_meta(obj, namespaced=False, name_is_label=True)

    def prepare_for_update(self, obj: Obj, old: Obj) -> None:
        obj["spec"] = old.get("spec", {})
        obj["status"] = old.get("status", {})
        meta = obj["metadata"]
        meta.setdefault("labels", {})["kubernetes.io/metadata.name"] = meta.get("name", "")

    def validate_update(self, obj: Obj, old: Obj) -> list[Cause]:
        return self.validate(obj) + validate_object_meta_update(obj, old)


CONFIGMAP_MAX_BYTES = 1024 * 1024


def _decode_binary_data(obj: Obj) -> None:
    """binaryData's values as kube holds them once its decoder has read them
    into []byte (Go's base64: line breaks skipped, padding required):
    canonical and on one line, or the request's 400 naming the first bad one."""
    binary: dict[str, str] = obj.get("binaryData") or {}
    for key, value in binary.items():
        try:
            binary[key] = base64data.normalized(value)
        except base64data.IllegalBase64 as e:
            raise errors.undecodable("ConfigMap", "v1", str(e)) from None


class ConfigMapStrategy:
    namespaced = True

    def prepare_for_create(self, obj: Obj) -> None:
        _decode_binary_data(obj)

    def validate(self, obj: Obj) -> list[Cause]:
        causes = validate_object_meta(obj, namespaced=True, name_is_label=False)
        data: dict[str, Any] = obj.get("data") or {}
        binary: dict[str, Any] = obj.get("binaryData") or {}
        size = 0
        for key, value in data.items():
            causes.extend(config_key_causes("data", key))
            if key in binary:
                causes.append(
                    invalid_value(f"data[{key}]", key, "duplicate of key present in binaryData")
                )
            size += len(key) + len(str(value))
        for key, value in binary.items():
            causes.extend(config_key_causes("binaryData", key))
            size += len(key) + len(base64data.decode(value))
        if size > CONFIGMAP_MAX_BYTES:
            causes.append(too_long("", CONFIGMAP_MAX_BYTES))
        return causes

    def prepare_for_update(self, obj: Obj, old: Obj) -> None:
        _decode_binary_data(obj)

    def validate_update(self, obj: Obj, old: Obj) -> list[Cause]:
        causes = validate_object_meta_update(obj, old)
        causes += immutable_when_set(obj, old, ("data", "binaryData"))
        return causes + self.validate(obj)


NAMESPACES = Resource(
    schema=kind_schemas.NAMESPACE,
    group="",
    version="v1",
    name="namespaces",
    singular="namespace",
    kind="Namespace",
    namespaced=False,
    strategy=NamespaceStrategy(),
    short_names=("ns",),
    # As kube's: namespaces go one at a time.
    verbs=("create", "delete", "get", "list", "patch", "update", "watch"),
    spec_finalizers=True,
    # As kube's: a Namespace has no metadata.namespace to select on.
    field_selectors=frozenset({"metadata.name"}),
    field_label_conversion=True,
    columns=(
        NAME_COLUMN,
        Column(
            name="Status",
            type="string",
            description="The status of the namespace",
            path="status.phase",
        ),
        AGE_COLUMN,
    ),
    return_deleted_object=True,
)

CONFIGMAPS = Resource(
    schema=kind_schemas.CONFIG_MAP,
    group="",
    version="v1",
    name="configmaps",
    singular="configmap",
    kind="ConfigMap",
    namespaced=True,
    strategy=ConfigMapStrategy(),
    short_names=("cm",),
    columns=(
        NAME_COLUMN,
        Column(name="Data", type="string", description="", cell=count_of("data", "binaryData")),
        AGE_COLUMN,
    ),
)

SECRETS = Resource(
    schema=kind_schemas.SECRET,
    group="",
    version="v1",
    name="secrets",
    singular="secret",
    kind="Secret",
    namespaced=True,
    strategy=SecretStrategy(),
    field_label_conversion=True,
    columns=(
        NAME_COLUMN,
        Column(name="Type", type="string", description="", path="type"),
        Column(name="Data", type="string", description="", cell=count_of("data")),
        AGE_COLUMN,
    ),
)

SERVICE_ACCOUNTS = Resource(
    schema=kind_schemas.SERVICE_ACCOUNT,
    group="",
    version="v1",
    name="serviceaccounts",
    singular="serviceaccount",
    kind="ServiceAccount",
    namespaced=True,
    strategy=ServiceAccountStrategy(),
    short_names=("sa",),
    return_deleted_object=True,
    # As kube v1.36's: no Secrets column (tokens are no longer kept in Secrets).
    columns=(NAME_COLUMN, AGE_COLUMN),
)
