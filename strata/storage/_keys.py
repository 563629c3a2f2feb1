"""What a storage key says about its resource: one reading of the key layout
for every layer that groups keys by resource (the cacher's caches, the storage
service's metrics and encryption rules).

Keys are "/<resource>/..." for the core and well-known groups and
"/<group>/<resource>/..." for custom resources, whose group always has a dot;
services and endpoints are kube's exceptions, under "/services/specs/" and
"/services/endpoints/".
"""

from __future__ import annotations

# The built-in resources outside the core group, which kube stores under
# "/<resource>/" like the core group's: their group comes from this table.
WELL_KNOWN_GROUPS: dict[str, str] = {
    "leases": "coordination.k8s.io",
    "deployments": "apps",
    "roles": "rbac.authorization.k8s.io",
    "rolebindings": "rbac.authorization.k8s.io",
    "clusterroles": "rbac.authorization.k8s.io",
    "clusterrolebindings": "rbac.authorization.k8s.io",
    # Where the service IP allocator keeps each address it hands out.
    "ipaddresses": "networking.k8s.io",
}
# Resources kube keeps somewhere other than "/<resource>/".
_ROOTS = {"services": "/services/specs/", "endpoints": "/services/endpoints/"}
_BY_ROOT = {root.strip("/"): resource for resource, root in _ROOTS.items()}


def key_root(group: str, resource: str) -> str:
    """Where every key of a resource starts."""
    if not group and resource in _ROOTS:
        return _ROOTS[resource]
    if not group or WELL_KNOWN_GROUPS.get(resource) == group:
        return f"/{resource}/"
    return f"/{group}/{resource}/"


def resource_of(key: str) -> tuple[str, str]:
    """(group, resource) of a key: "/secrets/ns/a" is ("", "secrets"), "/leases/ns/a"
    is ("coordination.k8s.io", "leases"), "/example.com/widgets/ns/a" is
    ("example.com", "widgets")."""
    parts = key.split("/")
    if len(parts) > 2 and (resource := _BY_ROOT.get(f"{parts[1]}/{parts[2]}")):
        return "", resource
    first = parts[1] if len(parts) > 1 else ""
    if "." in first and len(parts) > 2 and parts[2]:
        return first, parts[2]
    return WELL_KNOWN_GROUPS.get(first, ""), first


def resource_root(key: str) -> str:
    """The prefix every key of key's resource starts with; ValueError if it names none."""
    group, resource = resource_of(key)
    if not resource:
        raise ValueError(f"key {key!r} names no resource")
    return key_root(group, resource)
