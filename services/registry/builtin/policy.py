"""kube's default RBAC policy (plugin/pkg/auth/authorizer/rbac/bootstrappolicy),
for the resources strata serves: cluster-admin for everything, the aggregated
admin/edit/view roles with the system:aggregate-to-* roles feeding them, and
the binding that makes the system:masters group cluster-admin."""

from __future__ import annotations

from typing import Any

from services.registry.builtin.rbac import GROUP

Obj = dict[str, Any]

READ = ["get", "list", "watch"]
WRITE = ["create", "delete", "deletecollection", "patch", "update"]
AGGREGATE_TO = "rbac.authorization.k8s.io/aggregate-to-"


def _metadata(name: str, labels: dict[str, str] | None = None) -> Obj:
    return {
        "name": name,
        "labels": {"kubernetes.io/bootstrapping": "rbac-defaults", **(labels or {})},
        "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"},
    }


def _rule(groups: list[str], resources: list[str], verbs: list[str]) -> Obj:
    return {"apiGroups": groups, "resources": resources, "verbs": verbs}


def _cluster_role(name: str, labels: dict[str, str] | None = None, **fields: Any) -> Obj:
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": "ClusterRole",
        "metadata": _metadata(name, labels),
        **fields,
    }


def _aggregated(name: str, into: str | None) -> Obj:
    """admin, edit or view: the rules of the roles labelled aggregate-to-<name>;
    edit feeds admin and view feeds edit, as in kube."""
    labels = {f"{AGGREGATE_TO}{into}": "true"} if into else None
    selector = {"matchLabels": {f"{AGGREGATE_TO}{name}": "true"}}
    return _cluster_role(name, labels, aggregationRule={"clusterRoleSelectors": [selector]})


_CORE_READ = ["configmaps", "endpoints", "events", "serviceaccounts", "services"]

CLUSTER_ROLES: tuple[Obj, ...] = (
    _cluster_role(
        "cluster-admin",
        rules=[
            _rule(["*"], ["*"], ["*"]),
            {"nonResourceURLs": ["*"], "verbs": ["*"]},
        ],
    ),
    _aggregated("admin", None),
    _aggregated("edit", "admin"),
    _aggregated("view", "edit"),
    _cluster_role(
        "system:aggregate-to-admin",
        {f"{AGGREGATE_TO}admin": "true"},
        rules=[_rule([GROUP], ["rolebindings", "roles"], READ + WRITE)],
    ),
    _cluster_role(
        "system:aggregate-to-edit",
        {f"{AGGREGATE_TO}edit": "true"},
        rules=[
            _rule(
                [""], ["configmaps", "endpoints", "secrets", "serviceaccounts", "services"], WRITE
            ),
            _rule([""], ["secrets"], READ),
            _rule([""], ["serviceaccounts"], ["impersonate"]),
            _rule(["apps"], ["deployments", "deployments/scale"], WRITE),
            _rule(["coordination.k8s.io"], ["leases"], READ + WRITE),
        ],
    ),
    _cluster_role(
        "system:aggregate-to-view",
        {f"{AGGREGATE_TO}view": "true"},
        rules=[
            _rule([""], [*_CORE_READ, "services/status"], READ),
            _rule([""], ["namespaces", "namespaces/status"], READ),
            _rule(["apps"], ["deployments", "deployments/scale", "deployments/status"], READ),
        ],
    ),
)

CLUSTER_ROLE_BINDINGS: tuple[Obj, ...] = (
    {
        "apiVersion": f"{GROUP}/v1",
        "kind": "ClusterRoleBinding",
        "metadata": _metadata("cluster-admin"),
        "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [{"apiGroup": GROUP, "kind": "Group", "name": "system:masters"}],
    },
)
