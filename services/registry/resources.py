"""The catalog of built-in resources strata serves, in the order it serves them.

Each resource is declared in the module of its API group, beside its strategy
(services/registry/core.py, apps.py, rbac.py, ...); the generic declaration
types are in services/registry/declarations.py. This module gathers them, and
re-exports the names the rest of the registry imports from here.
"""

from __future__ import annotations

from services.registry.apps import DEPLOYMENTS
from services.registry.coordination import LEASES
from services.registry.core import (
    CONFIGMAP_MAX_BYTES,
    CONFIGMAPS,
    NAMESPACES,
    SECRETS,
    SERVICE_ACCOUNTS,
    ConfigMapStrategy,
    NamespaceStrategy,
)
from services.registry.crds import CUSTOM_RESOURCE_DEFINITIONS
from services.registry.declarations import (
    AGE_COLUMN,
    CREATED_AT_COLUMN,
    NAME_COLUMN,
    Column,
    Resource,
    ScaleRules,
    count_of,
)
from services.registry.events import EVENTS
from services.registry.rbac import CLUSTER_ROLE_BINDINGS, CLUSTER_ROLES, ROLE_BINDINGS, ROLES
from services.registry.services import ENDPOINTS, SERVICES

__all__ = [
    "AGE_COLUMN",
    "BUILT_IN",
    "CLUSTER_ROLES",
    "CLUSTER_ROLE_BINDINGS",
    "CONFIGMAPS",
    "CONFIGMAP_MAX_BYTES",
    "CREATED_AT_COLUMN",
    "CUSTOM_RESOURCE_DEFINITIONS",
    "DEPLOYMENTS",
    "ENDPOINTS",
    "EVENTS",
    "LEASES",
    "NAMESPACES",
    "NAME_COLUMN",
    "ROLES",
    "ROLE_BINDINGS",
    "SECRETS",
    "SERVICES",
    "SERVICE_ACCOUNTS",
    "Column",
    "ConfigMapStrategy",
    "NamespaceStrategy",
    "Resource",
    "ScaleRules",
    "count_of",
]

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
