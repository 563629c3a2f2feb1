"""The generic declaration of a served resource: what the Store, discovery,
OpenAPI and Tables read to serve a kind without knowing it.

A resource is declared as a `Resource` (its names, strategy, columns and
subresources) in the module of its API group; this module holds only the types
every declaration uses and the columns kube's printers share, so it imports no
resource (the generic machinery can import it and stay below every strategy).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from services.registry.generic.strategy import Obj, StatusStrategy, Strategy
from strata.api import meta
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

CREATED_AT_COLUMN = Column(
    name="Created At",
    type="date",
    description=AGE_COLUMN.description,
    path="metadata.creationTimestamp",
)
