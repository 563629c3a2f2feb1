"""Writes of built-in objects with empty maps and lists and null map values,
run the same way against strata and against a real kube-apiserver. kube
decodes every built-in object into its Go types and writes it back from them,
so what it answers is what those types make of the request: empty maps and
lists left out (omitempty), empty structs kept, a null map value or list item
its type's zero; a custom resource has no Go types but its metadata, and keeps
the rest as written. Each step's answer is reduced to its status code and the
fields the case looks at (a Status to its code and message).

kube's answers (round_trip_kube.json, next to this file) were recorded from
kube-apiserver v1.36 with

    ../shared/kube/with_kube.sh .venv/bin/python -m tests.support.round_trip_cases \\
        > tests/support/round_trip_kube.json
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from tests.support.apply_cases import WIDGETS, remove, served
from tests.support.kube_recording import record

Obj = dict[str, Any]
JSON = "application/json"
MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"
CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
SECRETS = "/api/v1/namespaces/default/secrets"
SERVICES = "/api/v1/namespaces/default/services"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
META = (("metadata", "labels"), ("metadata", "annotations"), ("metadata", "finalizers"))
CM_VIEW = (*META, ("data",), ("binaryData",))
POD_SPEC = ("spec", "template", "spec")
DEPLOYMENT_VIEW = (
    ("metadata", "labels"),
    ("metadata", "annotations"),
    ("spec", "selector"),
    ("spec", "template", "metadata"),
    (*POD_SPEC, "containers"),
    *((*POD_SPEC, field) for field in ("volumes", "nodeSelector", "tolerations")),
    *((*POD_SPEC, field) for field in ("imagePullSecrets", "initContainers", "securityContext")),
)
# The container fields a Deployment case looks at (the rest are defaults).
CONTAINER_FIELDS = (
    *("name", "image", "args", "command", "ports", "env", "envFrom"),
    *("volumeMounts", "resources", "securityContext"),
)
SERVICE_VIEW = tuple(
    ("spec", field) for field in ("ports", "selector", "externalIPs", "loadBalancerSourceRanges")
)


@dataclass(frozen=True)
class Case:
    """Requests to one object, in order: (method, content type, body), a POST
    to the collection, anything else to the object; view names the fields
    compared."""

    collection: str
    name: str
    steps: tuple[tuple[str, str, Any], ...]
    view: tuple[tuple[str, ...], ...]


def _meta(name: str, **fields: Any) -> Obj:
    return {"name": name, **fields}


def _deployment(name: str, pod: Obj, **template_meta: Any) -> Obj:
    labels = {"app": name}
    return {
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels, **template_meta}, "spec": pod},
        },
    }


def _container(**fields: Any) -> Obj:
    return {"name": "web", "image": "nginx", **fields}


_EMPTY_POD: Obj = {
    "containers": [
        _container(
            args=[], command=[], ports=[], env=[], envFrom=[], volumeMounts=[],
            resources={}, securityContext={},
        )
    ],
    "volumes": [], "nodeSelector": {}, "securityContext": {}, "tolerations": [],
    "imagePullSecrets": [], "initContainers": [],
}  # fmt: skip
_EMPTY_DEPLOYMENT = _deployment("rt-deploy-empty", _EMPTY_POD, annotations={})
_EMPTY_DEPLOYMENT["metadata"].update(labels={}, annotations={})
_EMPTY_DEPLOYMENT["spec"]["selector"]["matchExpressions"] = []
_WITH_ARGS = {"spec": {"template": {"spec": {"containers": [
    {"name": "web", "args": ["x"], "ports": [{"containerPort": 80}]}
]}}}}  # fmt: skip
_ARGS_EMPTIED = {"spec": {"template": {"spec": {"containers": [_container(args=[], ports=[])]}}}}

CASES: dict[str, Case] = {
    # kube: a create's empty maps and lists are left out.
    "configmap-create-empties": Case(
        CONFIGMAPS,
        "rt-cm-empty",
        (
            (
                "POST",
                JSON,
                {
                    "metadata": _meta("rt-cm-empty", labels={}, annotations={}, finalizers=[]),
                    "data": {},
                    "binaryData": {},
                },
            ),
        ),
        CM_VIEW,
    ),
    # kube: a null map value is "".
    "configmap-create-nulls": Case(
        CONFIGMAPS,
        "rt-cm-nulls",
        (
            (
                "POST",
                JSON,
                {
                    "metadata": _meta(
                        "rt-cm-nulls", labels={"a": None, "b": "x"}, annotations={"a": None}
                    ),
                    "data": {"k": None, "j": "v"},
                    "binaryData": {"b": None},
                },
            ),
        ),
        CM_VIEW,
    ),
    "configmap-updates": Case(
        CONFIGMAPS,
        "rt-cm-put",
        (
            ("POST", JSON, {"metadata": _meta("rt-cm-put", labels={"l": "1"}), "data": {"a": "b"}}),
            (
                "PUT",
                JSON,
                {
                    "metadata": _meta("rt-cm-put", labels={}, finalizers=[]),
                    "data": {},
                },
            ),
            (
                "PUT",
                JSON,
                {"metadata": _meta("rt-cm-put", labels={"l": None}), "data": {"k": None}},
            ),
        ),
        CM_VIEW,
    ),
    # A patch's result is decoded as any body is: the map a patch empties goes.
    "configmap-patches": Case(
        CONFIGMAPS,
        "rt-cm-patch",
        (
            ("POST", JSON, {"metadata": _meta("rt-cm-patch"), "data": {"q": "r"}}),
            ("PATCH", MERGE, {"data": {"q": None}}),
            ("PATCH", STRATEGIC, {"data": {"q": "1"}, "metadata": {"labels": {"l": "1"}}}),
            ("PATCH", STRATEGIC, {"data": {"q": None}, "metadata": {"labels": {"l": None}}}),
            (
                "PATCH",
                JSON_PATCH,
                [
                    {"op": "add", "path": "/data", "value": {}},
                    {"op": "add", "path": "/metadata/labels", "value": {"x": None}},
                ],
            ),
        ),
        CM_VIEW,
    ),
    "secret-empties-and-nulls": Case(
        SECRETS,
        "rt-secret",
        (
            ("POST", JSON, {"metadata": _meta("rt-secret"), "data": {}, "stringData": {}}),
            (
                "PUT",
                JSON,
                {
                    "metadata": _meta("rt-secret"),
                    "data": {"a": None},
                    "stringData": {"b": None},
                },
            ),
        ),
        (("data",), ("stringData",)),
    ),
    # Empty structs (securityContext, resources) stay; empty maps and lists go.
    "deployment-empties": Case(
        DEPLOYMENTS,
        "rt-deploy-empty",
        (
            ("POST", JSON, _EMPTY_DEPLOYMENT),
            ("PATCH", STRATEGIC, _WITH_ARGS),
            ("PATCH", MERGE, _ARGS_EMPTIED),
        ),
        DEPLOYMENT_VIEW,
    ),
    "deployment-nulls": Case(
        DEPLOYMENTS,
        "rt-deploy-nulls",
        (
            (
                "POST",
                JSON,
                _deployment(
                    "rt-deploy-nulls",
                    {"containers": [_container(args=[None])], "nodeSelector": {"a": None}},
                    annotations={"x": None},
                ),
            ),
        ),
        DEPLOYMENT_VIEW,
    ),
    # containers is required: [] is refused as none is.
    "deployment-no-containers": Case(
        DEPLOYMENTS,
        "rt-deploy-none",
        (("POST", JSON, _deployment("rt-deploy-none", {"containers": []})),),
        DEPLOYMENT_VIEW,
    ),
    "service-empties": Case(
        SERVICES,
        "rt-svc-empty",
        (
            (
                "POST",
                JSON,
                {
                    "metadata": _meta("rt-svc-empty"),
                    "spec": {
                        "clusterIP": "None",
                        "ports": [],
                        "selector": {},
                        "externalIPs": [],
                        "loadBalancerSourceRanges": [],
                    },
                },
            ),
        ),
        SERVICE_VIEW,
    ),
    "service-selector": Case(
        SERVICES,
        "rt-svc-selector",
        (
            (
                "POST",
                JSON,
                {
                    "metadata": _meta("rt-svc-selector"),
                    "spec": {"ports": [{"port": 80}], "selector": {"a": None, "b": "c"}},
                },
            ),
            (
                "PUT",
                JSON,
                {
                    "metadata": _meta("rt-svc-selector"),
                    "spec": {"ports": [{"port": 81}], "selector": {}},
                },
            ),
        ),
        SERVICE_VIEW,
    ),
    # ports is required but for a headless Service: [] is refused as none is.
    "service-no-ports": Case(
        SERVICES,
        "rt-svc-none",
        (("POST", JSON, {"metadata": _meta("rt-svc-none"), "spec": {"ports": []}}),),
        SERVICE_VIEW,
    ),
    # A custom resource keeps its own empty maps and lists and takes no nulls
    # in them; its metadata is Go's ObjectMeta all the same.
    "custom-resource-keeps-its-own": Case(
        WIDGETS,
        "rt-widget",
        (
            (
                "POST",
                JSON,
                {
                    "apiVersion": "ssa-cases.example.com/v1",
                    "kind": "Widget",
                    "metadata": _meta(
                        "rt-widget",
                        labels={},
                        annotations={"a": None},
                        finalizers=[],
                    ),
                    "spec": {"data": {}, "tags": [], "nested": {}},
                },
            ),
            ("PATCH", MERGE, {"metadata": {"labels": {"x": "y"}}}),
            ("PATCH", MERGE, {"metadata": {"labels": {"x": None}}}),
        ),
        (*META, ("spec",)),
    ),
}


def _at(obj: Obj, path: tuple[str, ...]) -> Any:
    value: Any = obj
    for name in path:
        if not isinstance(value, dict) or name not in value:
            return "<absent>"
        value = value[name]
    if path[-1] in ("containers", "initContainers") and isinstance(value, list):
        return [{k: c[k] for k in CONTAINER_FIELDS if k in c} for c in value]
    return value


def reduced(code: int, answer: Obj, view: tuple[tuple[str, ...], ...]) -> Obj:
    """What a step's answer is compared by."""
    if answer.get("kind") == "Status":
        return {"code": code, "message": answer.get("message")}
    return {"code": code, "object": {".".join(path): _at(answer, path) for path in view}}


def recorded() -> dict[str, list[Obj]]:
    """kube's answers to CASES, as `python -m tests.support.round_trip_cases` printed them."""
    text = (Path(__file__).parent / "round_trip_kube.json").read_bytes()
    answers: dict[str, list[Obj]] = orjson.loads(text)
    return answers


async def run(session: aiohttp.ClientSession, case: Case) -> list[Obj]:
    """Send the case's requests in order; each answer reduced."""
    await served(session, case.collection)
    path = f"{case.collection}/{case.name}"
    await remove(session, path)
    results = []
    try:
        for method, content_type, body in case.steps:
            url = case.collection if method == "POST" else path
            headers = {"Content-Type": content_type}
            async with session.request(
                method, url, data=orjson.dumps(body), headers=headers
            ) as response:
                answer = orjson.loads(await response.read())
                results.append(reduced(response.status, answer, case.view))
    finally:
        await remove(session, path)
    return results


if __name__ == "__main__":
    asyncio.run(record(run, CASES))
