"""The built-in resources strata serves, each a catalog entry plus a strategy.

Table columns are declared here too (kube's printers), so the gateway can
render `kubectl get` tables for any resource without knowing it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from services.registry import apps, crds, events, kind_schemas, rbac, services
from services.registry.coordination import LeaseStrategy
from services.registry.secrets import SecretStrategy, ServiceAccountStrategy
from services.registry.strategy import (
    Obj,
    StatusStrategy,
    Strategy,
    config_key_causes,
    immutable_when_set,
    validate_object_meta,
    validate_object_meta_update,
)
from strata.api import base64data, errors, meta
from strata.api.causes import invalid_value, too_long
from strata.api.errors import Cause
from strata.storage import key_root


@dataclass(frozen=True, kw_only=True)
class Column:
    name: str
    type: str
    description: str
    # A dotted path into the object...
    path: str = ""
    # ...or a cell computed from the object.
    cell: Callable[[Obj], Any] | None = None
    format: str = ""
    priority: int = 0


@dataclass(frozen=True, kw_only=True)
class ScaleRules:
    """Where the scale subresource (autoscaling/v1 Scale) reads and writes a
    resource: dotted paths to its replicas, and its selector as a string."""

    spec_replicas: str = "spec.replicas"
    status_replicas: str = "status.replicas"
    selector: Callable[[Obj], str]


@dataclass(frozen=True, kw_only=True)
class Resource:
    group: str
    version: str
    name: str
    singular: str
    kind: str
    namespaced: bool
    strategy: Strategy
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    verbs: tuple[str, ...] = (
        "create",
        "delete",
        "deletecollection",
        "get",
        "list",
        "patch",
        "update",
        "watch",
    )
    columns: tuple[Column, ...] = ()
    # Whether DELETE answers with the object it deleted (else a Success Status):
    # kube's registries' ReturnDeletedObject, set for namespaces, services and
    # serviceaccounts. An object a deletion only marks is the answer either way.
    return_deleted_object: bool = False
    # Whether DeleteOptions' propagationPolicy and orphanDependents put their
    # finalizers on (kube's DefaultGarbageCollectionPolicy; events' is
    # Unsupported, so deleting one with Foreground or Orphan deletes it at once).
    garbage_collected: bool = True
    # kube's namespace lifecycle: spec.finalizers hold a deletion back as
    # metadata.finalizers do, and status.phase says Terminating meanwhile.
    spec_finalizers: bool = False
    field_selectors: frozenset[str] = field(
        default_factory=lambda: frozenset({"metadata.name", "metadata.namespace"})
    )
    # Whether kube registers a field label conversion func for the kind (core
    # Namespaces, Secrets, Services, Events): an unknown field is then "field
    # label not supported" rather than "not a known field selector".
    field_label_conversion: bool = False
    # The status subresource: writes to the resource keep its status, writes to
    # status keep everything else.
    status: StatusStrategy | None = None
    scale: ScaleRules | None = None
    # A custom resource's: served from a CRD (no strategic merge patches).
    custom: bool = False
    list_kind: str = ""
    # The version objects are stored at, when not this one (a CRD's storage
    # version): writes convert to it and reads back, changing only apiVersion.
    storage_version: str = ""
    # What a request's object goes through right after decoding, before the
    # strategy sees it (a custom resource's pruning and defaulting).
    normalize: Callable[[Obj], None] | None = None
    # A finalizer every deletion puts on (a CRD's cleanup of its custom
    # resources), and what else marking one for deletion changes.
    deletion_finalizer: str = ""
    on_delete: Callable[[Obj], None] | None = None
    # The kind's OpenAPI v3 schema, as /openapi/v3 publishes it (None: an object
    # with nothing described beyond what every kind has).
    schema: Obj | None = None

    @property
    def subresources(self) -> tuple[str, ...]:
        return (
            (("status",) if self.status else ())
            + (("scale",) if self.scale else ())
            + (("finalize",) if self.spec_finalizers else ())
        )

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def storage_api_version(self) -> str:
        if not self.storage_version:
            return self.api_version
        return f"{self.group}/{self.storage_version}" if self.group else self.storage_version

    def key_prefix(self, namespace: str = "") -> str:
        base = key_root(self.group, self.name)
        return f"{base}{namespace}/" if self.namespaced and namespace else base

    def key(self, namespace: str, name: str) -> str:
        return f"{self.key_prefix(namespace)}{name}"


def count_of(*fields: str) -> Callable[[Obj], int]:
    """A cell counting the entries the named top-level fields hold (kube's DATA)."""
    return lambda obj: sum(len(obj.get(f) or ()) for f in fields)


NAME_COLUMN = Column(
    name="Name",
    type="string",
    format="name",
    description="Name must be unique within a namespace. Is required when creating resources, "
    "although some resources may allow a client to request the generation of an appropriate "
    "name automatically. Name is primarily intended for creation idempotence and configuration "
    "definition. Cannot be updated. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names",
    path="metadata.name",
)
AGE_COLUMN = Column(
    name="Age",
    type="string",
    description="CreationTimestamp is a timestamp representing the server time when this "
    "object was created. It is not guaranteed to be set in happens-before order across "
    "separate operations. Clients may not set this value. It is represented in RFC3339 form "
    "and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata",
    cell=lambda obj: meta.age((obj.get("metadata") or {}).get("creationTimestamp")),
)


class NamespaceStrategy:
    namespaced = False

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


EVENTS = Resource(
    schema=kind_schemas.EVENT,
    group="",
    version="v1",
    name="events",
    singular="event",
    kind="Event",
    namespaced=True,
    strategy=events.EventStrategy(),
    short_names=("ev",),
    garbage_collected=False,
    field_label_conversion=True,
    columns=(
        Column(
            name="Last Seen",
            type="string",
            description="The time at which the most recent occurrence of this event was recorded.",
            cell=events.last_seen_cell,
        ),
        Column(
            name="Type",
            type="string",
            description="Type of this event (Normal, Warning), new types could be added in the "
            "future",
            path="type",
        ),
        Column(
            name="Reason",
            type="string",
            description="This should be a short, machine understandable string that gives the "
            "reason for the transition into the object's current status.",
            path="reason",
        ),
        Column(
            name="Object",
            type="string",
            description="The object that this event is about.",
            cell=events.object_cell,
        ),
        Column(
            name="Subobject",
            type="string",
            priority=1,
            description="If referring to a piece of an object instead of an entire object, this "
            "string should contain a valid JSON/Go field access statement, such as "
            "desiredState.manifest.containers[2].",
            path="involvedObject.fieldPath",
        ),
        Column(
            name="Source",
            type="string",
            priority=1,
            description="The component reporting this event. Should be a short machine "
            "understandable string.",
            cell=events.source_cell,
        ),
        Column(
            name="Message",
            type="string",
            description="A human-readable description of the status of this operation.",
            cell=lambda obj: str(obj.get("message") or "").strip(),
        ),
        Column(
            name="First Seen",
            type="string",
            priority=1,
            description="The time at which the event was first recorded. (Time of server "
            "receipt is in TypeMeta.)",
            cell=events.first_seen_cell,
        ),
        Column(
            name="Count",
            type="string",
            priority=1,
            description="The number of times this event has occurred.",
            cell=events.count_cell,
        ),
        dataclasses.replace(NAME_COLUMN, priority=1),
    ),
)


def _replicas_ready(obj: Obj) -> str:
    """A Deployment's Ready cell: ready of desired replicas."""
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    return f"{status.get('readyReplicas', 0)}/{spec.get('replicas', 0)}"


def _containers(obj: Obj, field: str) -> str:
    template_spec = ((obj.get("spec") or {}).get("template") or {}).get("spec") or {}
    return ",".join(str(c.get(field, "")) for c in template_spec.get("containers") or [])


_DEPLOYMENT_STRATEGY = apps.DeploymentStrategy()
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
    scale=ScaleRules(selector=apps.scale_selector),
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
            cell=apps.scale_selector,
        ),
    ),
)

SERVICES = Resource(
    schema=kind_schemas.SERVICE,
    group="",
    version="v1",
    name="services",
    singular="service",
    kind="Service",
    namespaced=True,
    strategy=services.ServiceStrategy(),
    short_names=("svc",),
    categories=("all",),
    # As kube's: Services go one at a time (each releases its allocations).
    verbs=("create", "delete", "get", "list", "patch", "update", "watch"),
    return_deleted_object=True,
    field_label_conversion=True,
    columns=(
        NAME_COLUMN,
        Column(
            name="Type",
            type="string",
            description="The type of the service.",
            path="spec.type",
        ),
        Column(
            name="Cluster-IP",
            type="string",
            description="The cluster IP of the service.",
            cell=services.cluster_ip_cell,
        ),
        Column(
            name="External-IP",
            type="string",
            description="The external IP of the service.",
            cell=services.external_ip_cell,
        ),
        Column(
            name="Port(s)",
            type="string",
            description="The ports of the service.",
            cell=services.ports_cell,
        ),
        AGE_COLUMN,
        Column(
            name="Selector",
            type="string",
            priority=1,
            description="Route service traffic to pods with label keys and values matching "
            "this selector.",
            cell=services.selector_cell,
        ),
    ),
)

ENDPOINTS = Resource(
    schema=kind_schemas.ENDPOINTS,
    group="",
    version="v1",
    name="endpoints",
    singular="endpoints",
    kind="Endpoints",
    namespaced=True,
    strategy=services.EndpointsStrategy(),
    short_names=("ep",),
    columns=(
        NAME_COLUMN,
        Column(
            name="Endpoints",
            type="string",
            description="Endpoints of the service.",
            cell=services.endpoints_cell,
        ),
        AGE_COLUMN,
    ),
)

CREATED_AT_COLUMN = Column(
    name="Created At",
    type="date",
    description=AGE_COLUMN.description,
    path="metadata.creationTimestamp",
)


def _rbac(
    name: str, kind: str, strategy: Strategy, columns: tuple[Column, ...], schema: Obj
) -> Resource:
    return Resource(
        schema=schema,
        group=rbac.GROUP,
        version="v1",
        name=name,
        singular=kind.lower(),
        kind=kind,
        namespaced=strategy.namespaced,
        strategy=strategy,
        columns=columns,
    )


def _binding_columns(role_ref: str, scope: str) -> tuple[Column, ...]:
    """kube's columns for RoleBindings and ClusterRoleBindings."""
    return (
        NAME_COLUMN,
        Column(name="Role", type="string", description=role_ref, cell=rbac.role_cell),
        AGE_COLUMN,
        *(
            Column(
                name=title,
                type="string",
                priority=1,
                description=f"{title} in the {scope}",
                cell=rbac.subjects_cell(kind),
            )
            for title, kind in (
                ("Users", "User"),
                ("Groups", "Group"),
                ("ServiceAccounts", "ServiceAccount"),
            )
        ),
    )


_IMMUTABLE_REF = (
    "If the RoleRef cannot be resolved, the Authorizer must return an error. This field is "
    "immutable."
)
ROLES = _rbac(
    "roles", "Role", rbac.RoleStrategy(), (NAME_COLUMN, CREATED_AT_COLUMN), kind_schemas.ROLE
)
CLUSTER_ROLES = _rbac(
    "clusterroles",
    "ClusterRole",
    rbac.ClusterRoleStrategy(),
    (NAME_COLUMN, CREATED_AT_COLUMN),
    kind_schemas.CLUSTER_ROLE,
)
ROLE_BINDINGS = _rbac(
    "rolebindings",
    "RoleBinding",
    rbac.BindingStrategy("RoleBinding", True, ("Role", "ClusterRole")),
    _binding_columns(
        "RoleRef can reference a Role in the current namespace or a ClusterRole in the global "
        f"namespace. {_IMMUTABLE_REF}",
        "roleBinding",
    ),
    kind_schemas.ROLE_BINDING,
)
CLUSTER_ROLE_BINDINGS = _rbac(
    "clusterrolebindings",
    "ClusterRoleBinding",
    rbac.BindingStrategy("ClusterRoleBinding", False, ("ClusterRole",)),
    _binding_columns(
        f"RoleRef can only reference a ClusterRole in the global namespace. {_IMMUTABLE_REF}",
        "clusterRoleBinding",
    ),
    kind_schemas.CLUSTER_ROLE_BINDING,
)

_CRD_STRATEGY = crds.CRDStrategy()
CUSTOM_RESOURCE_DEFINITIONS = Resource(
    schema=kind_schemas.CUSTOM_RESOURCE_DEFINITION,
    group=crds.GROUP,
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
    deletion_finalizer=crds.CLEANUP_FINALIZER,
    on_delete=crds.mark_terminating,
    # kube's CRD registry marks a CRD without propagationPolicy's finalizers.
    garbage_collected=False,
)

BUILT_IN = (
    NAMESPACES,
    CONFIGMAPS,
    SECRETS,
    SERVICE_ACCOUNTS,
    SERVICES,
    ENDPOINTS,
    EVENTS,
    LEASES,
    DEPLOYMENTS,
    ROLES,
    CLUSTER_ROLES,
    ROLE_BINDINGS,
    CLUSTER_ROLE_BINDINGS,
    CUSTOM_RESOURCE_DEFINITIONS,
)
