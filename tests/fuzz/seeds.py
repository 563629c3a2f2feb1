"""A valid body for every kind the gateway serves, so that the fuzzer's
requests reach past decoding into validation, admission and storage: the
objects it seeds before the run (the targets its get, replace and patch
requests name), the victims it creates for its deletes, and the templates
its mangled bodies start from."""

from __future__ import annotations

from typing import Any

Doc = dict[str, Any]

# The label every object the fuzzer may delete carries: deletecollection is
# always narrowed to it, so that the seeded targets survive the run.
VICTIM_LABEL = "fuzz-victim"
# The custom resource the run serves, so that the document has its paths too.
CRD_PLURAL = "widgets"
CRD_KIND = "Widget"
RBAC = "rbac.authorization.k8s.io"

WIDGET_SCHEMA: Doc = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "replicas": {"type": "integer", "minimum": 0},
                "size": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 8},
                "tags": {"type": "array", "items": {"type": "string"}},
            },
        },
        "status": {
            "type": "object",
            "properties": {"replicas": {"type": "integer"}, "selector": {"type": "string"}},
        },
    },
}


def crd(group: str) -> Doc:
    """The run's CustomResourceDefinition: namespaced, with status and scale."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{CRD_PLURAL}.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": CRD_PLURAL, "kind": CRD_KIND},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": WIDGET_SCHEMA},
                    "subresources": {
                        "status": {},
                        "scale": {
                            "specReplicasPath": ".spec.replicas",
                            "statusReplicasPath": ".status.replicas",
                            "labelSelectorPath": ".status.selector",
                        },
                    },
                }
            ],
        },
    }


def _pod_template(app: str) -> Doc:
    return {
        "metadata": {"labels": {"app": app}},
        "spec": {"containers": [{"name": "c", "image": "nginx:1"}]},
    }


def _subject_review(kind: str, namespace: str) -> Doc:
    attributes = {"verb": "get", "resource": "configmaps", "namespace": namespace or "default"}
    spec: Doc = {"resourceAttributes": attributes}
    if kind != "SelfSubjectAccessReview":
        spec["user"] = "alice"
    return {"spec": spec}


def _fields(kind: str, name: str, namespace: str) -> Doc:
    """What besides apiVersion, kind and metadata a valid kind has."""
    subject = [{"kind": "User", "name": "alice", "apiGroup": RBAC}]
    rule = [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]
    fields: dict[str, Doc] = {
        "ConfigMap": {"data": {"a": "b"}},
        "Secret": {"type": "Opaque", "stringData": {"a": "b"}},
        "Endpoints": {"subsets": [{"addresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 80}]}]},
        "Event": {
            "involvedObject": {"kind": "ConfigMap", "name": "target", "namespace": namespace},
            "reason": "Fuzzed",
            "message": "m",
            "type": "Normal",
        },
        "Service": {"spec": {"selector": {"app": name}, "ports": [{"port": 80}]}},
        "Deployment": {
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"app": name}},
                "template": _pod_template(name),
            }
        },
        "Scale": {"spec": {"replicas": 2}},
        "Lease": {"spec": {"holderIdentity": "fuzz", "leaseDurationSeconds": 10}},
        "Role": {"rules": rule},
        "ClusterRole": {"rules": rule},
        "RoleBinding": {"roleRef": {"apiGroup": RBAC, "kind": "Role", "name": "r"}},
        "ClusterRoleBinding": {
            "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "view"}
        },
        "TokenReview": {"spec": {"token": "not-a-token", "audiences": ["api"]}},
        "TokenRequest": {"spec": {"audiences": ["api"], "expirationSeconds": 600}},
        "SelfSubjectRulesReview": {"spec": {"namespace": namespace or "default"}},
        CRD_KIND: {"spec": {"replicas": 1, "size": "small", "tags": ["a"]}},
    }
    if kind.endswith("RoleBinding"):
        return {**fields[kind], "subjects": subject}
    if kind.endswith("SubjectAccessReview"):
        return _subject_review(kind, namespace)
    return fields.get(kind, {})


def valid(api_version: str, kind: str, name: str, namespace: str) -> Doc:
    """A body of kind that the gateway accepts as it is (a new CRD only where
    name is a CRD's name, plural.group)."""
    if kind == "CustomResourceDefinition":
        return crd(name.partition(".")[2] or f"{name}.example.com")
    # A review's metadata must be empty but for its namespace.
    metadata: Doc = {} if kind.endswith("Review") else {"name": name}
    if namespace:
        metadata["namespace"] = namespace
    return {"apiVersion": api_version, "kind": kind, "metadata": metadata} | _fields(
        kind, name, namespace
    )
