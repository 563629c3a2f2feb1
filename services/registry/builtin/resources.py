"""The catalog of built-in resources strata serves, in the order it serves them,
and the scheme their decoders' refusals name.

Each resource is declared in the module of its API group, beside its strategy
(services/registry/builtin/core.py, apps.py, rbac.py, ...); the generic
declaration types are in services/registry/generic/declarations.py. This module
gathers them, and re-exports the resources the rest of the registry imports
from here.
"""

from __future__ import annotations

from services.registry.builtin.apps import DEPLOYMENTS
from services.registry.builtin.coordination import LEASES
from services.registry.builtin.core import CONFIGMAPS, NAMESPACES, SECRETS, SERVICE_ACCOUNTS
from services.registry.builtin.events import EVENTS
from services.registry.builtin.rbac import (
    CLUSTER_ROLE_BINDINGS,
    CLUSTER_ROLES,
    ROLE_BINDINGS,
    ROLES,
)
from services.registry.builtin.services import ENDPOINTS, SERVICES
from services.registry.extensions.crds import CUSTOM_RESOURCE_DEFINITIONS
from services.registry.generic.bodies import scheme_of

__all__ = [
    "BUILT_IN",
    "CLUSTER_ROLES",
    "CLUSTER_ROLE_BINDINGS",
    "CONFIGMAPS",
    "CUSTOM_RESOURCE_DEFINITIONS",
    "DEPLOYMENTS",
    "ENDPOINTS",
    "EVENTS",
    "LEASES",
    "NAMESPACES",
    "ROLES",
    "ROLE_BINDINGS",
    "SCHEME",
    "SECRETS",
    "SERVICES",
    "SERVICE_ACCOUNTS",
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

# What kube's scheme holds of them, as a decoder refusing a kind names it: the
# internal packages kube converts a group's kinds to (core for the legacy group).
SCHEME = scheme_of(
    BUILT_IN,
    internal={
        "": "core",
        "apps": "apps",
        "coordination.k8s.io": "coordination",
        "rbac.authorization.k8s.io": "rbac",
    },
)
