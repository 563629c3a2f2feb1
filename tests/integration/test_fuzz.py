"""Hypothesis over request bodies, against the running system: whatever a client
sends to create, replace or patch objects (nonsense JSON, wrong types anywhere,
resource-shaped bodies with mangled fields, bytes that are no JSON at all), the
answer comes within seconds and is never a 5xx: bad input gets a Status."""

from __future__ import annotations

import json
import os
import ssl
import time
import urllib.error
import urllib.request
import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from strata.dev import System

# Enough to meet every kind of refusal each run, few enough to keep `make test`
# quick; STRATA_FUZZ_EXAMPLES asks for a longer run.
EXAMPLES = int(os.environ.get("STRATA_FUZZ_EXAMPLES", "150"))
FIELDS = [
    "apiVersion",
    "kind",
    "metadata",
    "name",
    "namespace",
    "labels",
    "annotations",
    "finalizers",
    "ownerReferences",
    "generateName",
    "resourceVersion",
    "uid",
    "spec",
    "status",
    "data",
    "binaryData",
    "stringData",
    "type",
    "replicas",
    "selector",
    "template",
    "containers",
    "ports",
    "rules",
    "subjects",
    "roleRef",
    "holderIdentity",
    "leaseDurationSeconds",
    "clusterIP",
    "immutable",
]
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
keys = st.sampled_from(FIELDS) | st.text(max_size=12)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=5),
    max_leaves=20,
)
KINDS = {
    "/api/v1/namespaces/{ns}/configmaps": ("v1", "ConfigMap"),
    "/api/v1/namespaces/{ns}/secrets": ("v1", "Secret"),
    "/api/v1/namespaces/{ns}/services": ("v1", "Service"),
    "/api/v1/namespaces/{ns}/serviceaccounts": ("v1", "ServiceAccount"),
    "/apis/apps/v1/namespaces/{ns}/deployments": ("apps/v1", "Deployment"),
    "/apis/coordination.k8s.io/v1/namespaces/{ns}/leases": ("coordination.k8s.io/v1", "Lease"),
    "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles": (
        "rbac.authorization.k8s.io/v1",
        "Role",
    ),
}


@st.composite
def resource_bodies(draw: st.DrawFn, api_version: str, kind: str) -> Any:
    """A body shaped like the resource, any part of it possibly wrong."""
    body: dict[str, Any] = {
        "apiVersion": draw(st.sampled_from([api_version, "v1", "nope/v9"]) | values),
        "kind": draw(st.sampled_from([kind, "Other"]) | values),
        "metadata": draw(
            st.fixed_dictionaries(
                {"name": st.from_regex(r"[a-z][a-z0-9-]{0,10}", fullmatch=True) | values},
                optional={
                    "labels": st.dictionaries(keys, values, max_size=3),
                    "annotations": values,
                    "finalizers": values,
                    "ownerReferences": values,
                    "generateName": values,
                },
            )
            | values
        ),
    }
    body.update(draw(st.dictionaries(keys, values, max_size=4)))
    return body


VALID: dict[str, Any] = {
    "/apis/apps/v1/namespaces/{ns}/deployments": {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [
                        {
                            "name": "web",
                            "image": "nginx:1",
                            "ports": [{"containerPort": 80, "protocol": "TCP"}],
                            "env": [{"name": "A", "value": "b"}],
                        }
                    ]
                },
            },
        },
    },
    "/api/v1/namespaces/{ns}/services": {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "svc"},
        "spec": {
            "type": "NodePort",
            "selector": {"app": "web"},
            "ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}],
        },
    },
    "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings": {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "rb"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"},
        "subjects": [{"kind": "User", "name": "u", "apiGroup": "rbac.authorization.k8s.io"}],
    },
    "/api/v1/namespaces/{ns}/events": {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "ev"},
        "involvedObject": {"kind": "Pod", "name": "p", "namespace": "ns"},
        "reason": "Started",
        "message": "m",
        "type": "Normal",
    },
}


@st.composite
def mutated(draw: st.DrawFn, template: Any) -> Any:
    """template with a few of its values, at any depth, replaced or removed."""
    obj = json.loads(json.dumps(template))
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        holder: Any = None
        key: Any = None
        node = obj
        while isinstance(node, dict | list) and node and draw(st.booleans()):
            key = draw(
                st.sampled_from(sorted(node) if isinstance(node, dict) else range(len(node)))
            )
            holder, node = node, node[key]
        if holder is None:
            continue
        if isinstance(holder, dict) and draw(st.booleans()):
            del holder[key]
        else:
            holder[key] = draw(values)
    return obj


class Gateway:
    """A synchronous HTTPS client: hypothesis drives plain functions."""

    def __init__(self, system: System) -> None:
        assert system.endpoints is not None
        self.base = system.endpoints.gateway
        self.token = system.admin_token
        self.context = ssl.create_default_context(cafile=str(system.ca_file))

    def send(self, method: str, path: str, body: bytes, content_type: str) -> tuple[int, Any]:
        request = urllib.request.Request(
            self.base + path,
            data=body,
            method=method,
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": content_type},
        )
        try:
            with urllib.request.urlopen(request, context=self.context, timeout=10) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())


@pytest.fixture(scope="module")
def gateway(system: System) -> Gateway:
    return Gateway(system)


@pytest.fixture(scope="module")
def fuzz_namespace(gateway: Gateway) -> str:
    name = f"fuzz-{uuid.uuid4().hex[:8]}"
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    status, _ = gateway.send("POST", "/api/v1/namespaces", json.dumps(body).encode(), "")
    assert status == 201
    target = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "target"}}
    path = f"/api/v1/namespaces/{name}/configmaps"
    assert gateway.send("POST", path, json.dumps(target).encode(), "")[0] == 201
    return name


def _checked(answer: tuple[int, Any]) -> None:
    status, body = answer
    assert status < 500, body
    if status >= 400:
        assert body["kind"] == "Status" and body["code"] == status, body


fuzzed = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@fuzzed
@given(data=st.data())
def test_creates_never_fail_the_server(
    gateway: Gateway, fuzz_namespace: str, data: st.DataObject
) -> None:
    path = data.draw(st.sampled_from(sorted(KINDS)))
    api_version, kind = KINDS[path]
    body = data.draw(
        resource_bodies(api_version, kind)
        | values
        | st.binary(max_size=40).map(lambda b: ("raw", b))
    )
    raw = body[1] if isinstance(body, tuple) else json.dumps(body).encode()
    _checked(gateway.send("POST", path.format(ns=fuzz_namespace), raw, "application/json"))


PATCH_TYPES = [
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/json-patch+json",
    "application/apply-patch+yaml",
]


@fuzzed
@given(data=st.data())
def test_nearly_valid_objects_never_fail_the_server(
    gateway: Gateway, fuzz_namespace: str, data: st.DataObject
) -> None:
    path = data.draw(st.sampled_from(sorted(VALID)))
    body = data.draw(mutated(VALID[path]))
    _checked(gateway.send("POST", path.format(ns=fuzz_namespace), json.dumps(body).encode(), ""))


@fuzzed
@given(
    method=st.sampled_from(["PUT", "PATCH"]),
    patch_type=st.sampled_from(PATCH_TYPES),
    body=resource_bodies("v1", "ConfigMap") | values,
    query=st.sampled_from(
        ["", "?fieldManager=fuzz", "?fieldManager=fuzz&force=true", "?fieldValidation=Strict"]
    ),
)
def test_updates_and_patches_never_fail_the_server(
    gateway: Gateway, fuzz_namespace: str, method: str, patch_type: str, body: Any, query: str
) -> None:
    path = f"/api/v1/namespaces/{fuzz_namespace}/configmaps/target{query}"
    content_type = patch_type if method == "PATCH" else "application/json"
    _checked(gateway.send(method, path, json.dumps(body).encode(), content_type))


GIZMO_SCHEMA = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "required": ["size"],
            "properties": {
                "size": {"type": "integer", "minimum": 0, "maximum": 10, "default": 1},
                "color": {"type": "string", "enum": ["red", "blue"]},
                "code": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 8},
                "when": {"type": "string", "format": "date-time"},
                "ratio": {"type": "number", "exclusiveMinimum": True, "minimum": 0},
                "port": {"x-kubernetes-int-or-string": True},
                "tags": {"type": "array", "maxItems": 3, "items": {"type": "string"}},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "note": {"type": "string", "nullable": True},
                "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "parts": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {"name": {"type": "string"}, "n": {"type": "integer"}},
                    },
                },
            },
        }
    },
}


@pytest.fixture(scope="module")
def gizmos(gateway: Gateway, fuzz_namespace: str) -> str:
    """A CRD with a schema using most of what schemas can say; its collection."""
    group = f"f{uuid.uuid4().hex[:8]}.example.com"
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"gizmos.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": "gizmos", "kind": "Gizmo"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": GIZMO_SCHEMA},
                }
            ],
        },
    }
    crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    assert gateway.send("POST", crds, json.dumps(crd).encode(), "")[0] == 201
    path = f"/apis/{group}/v1/namespaces/{fuzz_namespace}/gizmos"
    probe = {"apiVersion": f"{group}/v1", "kind": "Gizmo", "metadata": {"name": "probe"}}
    deadline = time.monotonic() + 15
    while gateway.send("POST", path, json.dumps({**probe, "spec": {"size": 1}}).encode(), "")[
        0
    ] not in (201, 409):
        assert time.monotonic() < deadline, "the CRD was not served in time"
        time.sleep(0.2)
    return path


VALID_GIZMO = {
    "kind": "Gizmo",
    "metadata": {"name": "g"},
    "spec": {
        "size": 3,
        "color": "red",
        "code": "abc",
        "when": "2026-01-02T03:04:05Z",
        "ratio": 0.5,
        "port": "http",
        "tags": ["a", "b"],
        "labels": {"x": "y"},
        "note": None,
        "extra": {"anything": [1, {"deep": True}]},
        "parts": [{"name": "p", "n": 1}],
    },
}


@fuzzed
@given(data=st.data())
def test_custom_resources_never_fail_the_server(
    gizmos: str, gateway: Gateway, data: st.DataObject
) -> None:
    group_version = gizmos.split("/")[2] + "/v1"
    body = data.draw(mutated({**VALID_GIZMO, "apiVersion": group_version}))
    query = data.draw(st.sampled_from(["", "?fieldValidation=Strict", "?fieldValidation=Ignore"]))
    _checked(gateway.send("POST", gizmos + query, json.dumps(body).encode(), ""))
