"""kube's default RBAC policy (plugin/pkg/auth/authorizer/rbac/bootstrappolicy),
the part of it for users rather than for kube's own components, with kube's
names, labels, annotations and rules (as kube-apiserver v1.36 creates them):
cluster-admin, the aggregated admin/edit/view roles with the
system:aggregate-to-* roles feeding them, what every user may do
(system:discovery, system:basic-user, system:public-info-viewer),
system:service-account-issuer-discovery, system:auth-delegator and
system:monitoring, and the bindings that grant them. Rules name resources
strata does not serve, as kube's do: a rule grants nothing that is not there.
The registry's bootstrap (services/registry/controllers/bootstrap.py) creates
and reconciles them at every start."""

from __future__ import annotations

from typing import Any

from services.registry.builtin.rbac import GROUP

Obj = dict[str, Any]

READ = ["get", "list", "watch"]
WRITE = ["create", "delete", "deletecollection", "patch", "update"]
AGGREGATE_TO = "rbac.authorization.k8s.io/aggregate-to-"
AUTOUPDATE = "rbac.authorization.kubernetes.io/autoupdate"


def _metadata(name: str, labels: dict[str, str] | None = None) -> Obj:
    return {
        "name": name,
        "labels": {"kubernetes.io/bootstrapping": "rbac-defaults", **(labels or {})},
        "annotations": {AUTOUPDATE: "true"},
    }


def _rule(groups: list[str], resources: list[str], verbs: list[str]) -> Obj:
    return {"verbs": verbs, "apiGroups": groups, "resources": resources}


def _urls(urls: list[str], verbs: list[str] | None = None) -> Obj:
    return {"verbs": verbs or ["get"], "nonResourceURLs": urls}


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


def _feeding(name: str, rules: list[Obj]) -> Obj:
    return _cluster_role(
        f"system:aggregate-to-{name}", {f"{AGGREGATE_TO}{name}": "true"}, rules=rules
    )


_POD_SUBRESOURCES = ["pods/attach", "pods/exec", "pods/portforward", "pods/proxy"]

_TO_ADMIN = [
    _rule(["authorization.k8s.io"], ["localsubjectaccessreviews"], ["create"]),
    _rule([GROUP], ["rolebindings", "roles"], sorted(READ + WRITE)),
]
_TO_EDIT = [
    _rule([""], [*_POD_SUBRESOURCES, "secrets", "services/proxy"], READ),
    _rule([""], ["serviceaccounts"], ["impersonate"]),
    _rule([""], ["pods", *_POD_SUBRESOURCES], WRITE),
    _rule([""], ["pods/eviction"], ["create"]),
    _rule(
        [""],
        [
            *("configmaps", "persistentvolumeclaims", "replicationcontrollers"),
            *("replicationcontrollers/scale", "secrets", "serviceaccounts", "services"),
            "services/proxy",
        ],
        WRITE,
    ),
    _rule([""], ["serviceaccounts/token"], ["create"]),
    _rule(["", "events.k8s.io"], ["events"], WRITE),
    _rule(
        ["apps"],
        [
            *("daemonsets", "deployments", "deployments/rollback", "deployments/scale"),
            *("replicasets", "replicasets/scale", "statefulsets", "statefulsets/scale"),
        ],
        WRITE,
    ),
    _rule(["autoscaling"], ["horizontalpodautoscalers"], WRITE),
    _rule(["batch"], ["cronjobs", "jobs"], WRITE),
    _rule(
        ["extensions"],
        [
            *("daemonsets", "deployments", "deployments/rollback", "deployments/scale"),
            *("ingresses", "networkpolicies", "replicasets", "replicasets/scale"),
            "replicationcontrollers/scale",
        ],
        WRITE,
    ),
    _rule(["policy"], ["poddisruptionbudgets"], WRITE),
    _rule(["networking.k8s.io"], ["ingresses", "networkpolicies"], WRITE),
    _rule(["coordination.k8s.io"], ["leases"], sorted(READ + WRITE)),
    _rule(["resource.k8s.io"], ["resourceclaims", "resourceclaimtemplates"], WRITE),
]
_TO_VIEW = [
    _rule(
        [""],
        [
            *("configmaps", "endpoints", "persistentvolumeclaims"),
            *("persistentvolumeclaims/status", "pods", "replicationcontrollers"),
            *("replicationcontrollers/scale", "serviceaccounts", "services", "services/status"),
        ],
        READ,
    ),
    _rule(
        [""],
        [
            *("bindings", "limitranges", "namespaces/status", "pods/log", "pods/status"),
            *("replicationcontrollers/status", "resourcequotas", "resourcequotas/status"),
        ],
        READ,
    ),
    _rule([""], ["namespaces"], READ),
    _rule(["", "events.k8s.io"], ["events"], READ),
    _rule(["discovery.k8s.io"], ["endpointslices"], READ),
    _rule(
        ["apps"],
        [
            *("controllerrevisions", "daemonsets", "daemonsets/status", "deployments"),
            *("deployments/scale", "deployments/status", "replicasets", "replicasets/scale"),
            *("replicasets/status", "statefulsets", "statefulsets/scale", "statefulsets/status"),
        ],
        READ,
    ),
    _rule(["autoscaling"], ["horizontalpodautoscalers", "horizontalpodautoscalers/status"], READ),
    _rule(["batch"], ["cronjobs", "cronjobs/status", "jobs", "jobs/status"], READ),
    _rule(
        ["extensions"],
        [
            *("daemonsets", "daemonsets/status", "deployments", "deployments/scale"),
            *("deployments/status", "ingresses", "ingresses/status", "networkpolicies"),
            *("replicasets", "replicasets/scale", "replicasets/status"),
            "replicationcontrollers/scale",
        ],
        READ,
    ),
    _rule(["policy"], ["poddisruptionbudgets", "poddisruptionbudgets/status"], READ),
    _rule(["networking.k8s.io"], ["ingresses", "ingresses/status", "networkpolicies"], READ),
    _rule(
        ["resource.k8s.io"],
        ["resourceclaims", "resourceclaims/status", "resourceclaimtemplates"],
        READ,
    ),
]

_HEALTH = ["/healthz", "/livez", "/readyz"]
_VERSION = ["/version", "/version/"]

CLUSTER_ROLES: tuple[Obj, ...] = (
    _cluster_role(
        "cluster-admin",
        rules=[_rule(["*"], ["*"], ["*"]), _urls(["*"], ["*"])],
    ),
    _aggregated("admin", None),
    _aggregated("edit", "admin"),
    _aggregated("view", "edit"),
    _feeding("admin", _TO_ADMIN),
    _feeding("edit", _TO_EDIT),
    _feeding("view", _TO_VIEW),
    _cluster_role(
        "system:discovery",
        rules=[
            _urls(
                [
                    *("/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez"),
                    *("/openapi", "/openapi/*", "/readyz", *_VERSION),
                ]
            )
        ],
    ),
    _cluster_role(
        "system:basic-user",
        rules=[
            _rule(
                ["authorization.k8s.io"],
                ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                ["create"],
            ),
            _rule(["authentication.k8s.io"], ["selfsubjectreviews"], ["create"]),
        ],
    ),
    _cluster_role("system:public-info-viewer", rules=[_urls([*_HEALTH, *_VERSION])]),
    _cluster_role(
        "system:service-account-issuer-discovery",
        rules=[
            _urls(
                [
                    *("/.well-known/openid-configuration", "/.well-known/openid-configuration/"),
                    *("/openid/v1/jwks", "/openid/v1/jwks/"),
                ]
            )
        ],
    ),
    _cluster_role(
        "system:auth-delegator",
        rules=[
            _rule(["authentication.k8s.io"], ["tokenreviews"], ["create"]),
            _rule(["authorization.k8s.io"], ["subjectaccessreviews"], ["create"]),
        ],
    ),
    _cluster_role(
        "system:monitoring",
        rules=[
            _urls(
                [
                    *("/flagz", "/healthz", "/healthz/*", "/livez", "/livez/*", "/metrics"),
                    *("/metrics/slis", "/readyz", "/readyz/*", "/statusz"),
                ]
            ),
            _rule([""], ["nodes/metrics"], ["get"]),
        ],
    ),
)


def _binding(name: str, *groups: str) -> Obj:
    """The ClusterRoleBinding of the ClusterRole name to groups, named as it."""
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": "ClusterRoleBinding",
        "metadata": _metadata(name),
        "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": name},
        "subjects": [{"apiGroup": GROUP, "kind": "Group", "name": g} for g in groups],
    }


CLUSTER_ROLE_BINDINGS: tuple[Obj, ...] = (
    _binding("cluster-admin", "system:masters"),
    _binding("system:monitoring", "system:monitoring"),
    _binding("system:discovery", "system:authenticated"),
    _binding("system:basic-user", "system:authenticated"),
    _binding("system:public-info-viewer", "system:authenticated", "system:unauthenticated"),
    _binding("system:service-account-issuer-discovery", "system:serviceaccounts"),
)
