"""Server-side apply sequences, run the same way against strata and against a
real kube-apiserver: each case is a series of applies (manager, configuration)
to one object, and each step's answer is reduced to what the tests compare
(the status code, the fields of the object the case is about, and every
managedFields entry without its time).

kube's answers (server_side_apply_kube.json, next to this file) were recorded
from kube-apiserver v1.36 with

    ../shared/kube/with_kube.sh .venv/bin/python -m tests.support.apply_cases \
        > tests/support/server_side_apply_kube.json
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import yaml

from tests.support.kube_recording import record

Obj = dict[str, Any]
APPLY = {"Content-Type": "application/apply-patch+yaml"}
MERGE = {"Content-Type": "application/merge-patch+json"}
CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
WIDGETS = "/apis/ssa-cases.example.com/v1/namespaces/default/widgets"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
_STRINGS = {"type": "object", "additionalProperties": {"type": "string"}}
# A custom resource: kube keeps its objects as applied (no Go types to drop
# empty maps or take nulls), so its cases show apply's own rules alone.
WIDGET_CRD: Obj = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.ssa-cases.example.com"},
    "spec": {
        "group": "ssa-cases.example.com",
        "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "properties": {
                                    "data": _STRINGS,
                                    "count": {"type": "integer"},
                                    "nested": {
                                        "type": "object",
                                        "properties": {"a": {"type": "string"}},
                                    },
                                    "tags": {
                                        "type": "array",
                                        "items": {"type": "string"},
                                        "x-kubernetes-list-type": "set",
                                    },
                                    "selector": {
                                        "type": "object",
                                        "properties": {"matchLabels": _STRINGS},
                                        "x-kubernetes-map-type": "atomic",
                                    },
                                },
                            }
                        },
                    }
                },
            }
        ],
    },
}
# The container fields a Deployment case looks at (the rest are defaults).
CONTAINER_FIELDS = ("name", "image", "args", "ports")


@dataclass(frozen=True)
class Case:
    """Applies to one object, in order, each by a manager ("name:force" forces);
    view names the fields compared."""

    collection: str
    steps: tuple[tuple[str, Obj], ...]
    view: tuple[tuple[str, ...], ...]


def configmap(name: str, **fields: Any) -> Obj:
    """A ConfigMap's applied configuration; metadata_* keywords go in metadata."""
    metadata: Obj = {"name": name}
    body: Obj = {}
    for key, value in fields.items():
        if key.startswith("metadata_"):
            metadata[key.removeprefix("metadata_")] = value
        else:
            body[key] = value
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, **body}


def deployment(name: str, containers: list[Obj]) -> Obj:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": containers}},
        },
    }


DATA = (("data",),)
LABELS = (("metadata", "labels"),)
FINALIZERS = (("metadata", "finalizers"),)
CONTAINERS = (("spec", "template", "spec", "containers"),)
WEB = {"name": "web", "image": "nginx"}


def widget(name: str, **spec: Any) -> Obj:
    kind = {"apiVersion": "ssa-cases.example.com/v1", "kind": "Widget"}
    return {**kind, "metadata": {"name": name}, "spec": spec}


def _widget(*steps: tuple[str, Obj]) -> Case:
    return Case(WIDGETS, steps, (("spec",),))


def _cm(*steps: tuple[str, Obj], view: tuple[tuple[str, ...], ...] = DATA) -> Case:
    return Case(CONFIGMAPS, steps, view)


def _deploy(name: str, *containers: list[Obj]) -> Case:
    return Case(DEPLOYMENTS, tuple(("a", deployment(name, c)) for c in containers), CONTAINERS)


def _replicas(name: str, replicas: Any) -> Obj:
    applied = deployment(name, [WEB])
    applied["spec"]["replicas"] = replicas
    return applied


CASES: dict[str, Case] = {
    # The sequence: the empty map, then a key in it.
    "empty-map-then-key": _cm(
        ("a", configmap("ssa-empty-then-key", data={"k1": "v1"})),
        ("a", configmap("ssa-empty-then-key", data={})),
        ("a", configmap("ssa-empty-then-key", data={"k2": "v2"})),
    ),
    "empty-map-first": _cm(
        ("a", configmap("ssa-empty-first", data={})),
        ("a", configmap("ssa-empty-first", data={"k1": "v1"})),
        ("a", configmap("ssa-empty-first")),
    ),
    "one-key-of-two-removed": _cm(
        ("a", configmap("ssa-one-of-two", data={"k1": "v1", "k2": "v2"})),
        ("a", configmap("ssa-one-of-two", data={"k1": "v1"})),
    ),
    "key-set-to-null": _cm(
        ("a", configmap("ssa-key-null", data={"k1": "v1", "k2": "v2"})),
        ("a", configmap("ssa-key-null", data={"k1": "v1", "k2": None})),
        ("a", configmap("ssa-key-null", data={"k1": "v1"})),
    ),
    "map-set-to-null": _cm(
        ("a", configmap("ssa-map-null", data={"k1": "v1"})),
        ("a", configmap("ssa-map-null", data=None)),
        ("a", configmap("ssa-map-null", data={"k2": "v2"})),
    ),
    "two-managers-one-empties": _cm(
        ("a", configmap("ssa-two-managers", data={"k1": "v1"})),
        ("b", configmap("ssa-two-managers", data={"k2": "v2"})),
        ("a", configmap("ssa-two-managers", data={})),
        ("b", configmap("ssa-two-managers", data={})),
    ),
    "two-managers-share-a-key": _cm(
        ("a", configmap("ssa-shared-key", data={"k1": "v1"})),
        ("b", configmap("ssa-shared-key", data={"k1": "v1"})),
        ("a", configmap("ssa-shared-key", data={})),
        ("b", configmap("ssa-shared-key")),
    ),
    "empty-map-owned-then-key-by-another": _cm(
        ("a", configmap("ssa-empty-owned", data={})),
        ("b", configmap("ssa-empty-owned", data={"k2": "v2"})),
        ("b:force", configmap("ssa-empty-owned", data={"k2": "v2"})),
        ("a", configmap("ssa-empty-owned", data={})),
    ),
    "empty-map-over-anothers-keys": _cm(
        ("a", configmap("ssa-empty-over", data={"k1": "v1"})),
        ("b", configmap("ssa-empty-over", data={})),
        ("a", configmap("ssa-empty-over")),
    ),
    "null-over-anothers-map": _cm(
        ("a", configmap("ssa-null-over", data={"k1": "v1"})),
        ("b", configmap("ssa-null-over", data=None)),
        ("b:force", configmap("ssa-null-over", data=None)),
    ),
    "label-set-to-null": _cm(
        ("a", configmap("ssa-label-null", metadata_labels={"app": "web", "tier": "db"})),
        ("a", configmap("ssa-label-null", metadata_labels={"app": "web", "tier": None})),
        view=LABELS,
    ),
    "replicas-set-to-null": Case(
        DEPLOYMENTS,
        (("a", _replicas("ssa-replicas", 3)), ("a", _replicas("ssa-replicas", None))),
        (("spec", "replicas"),),
    ),
    "cr-empty-map-then-key": _widget(
        ("a", widget("ssa-w-empty", data={"k1": "v1"})),
        ("a", widget("ssa-w-empty", data={})),
        ("a", widget("ssa-w-empty", data={"k2": "v2"})),
    ),
    "cr-fields-left-out": _widget(
        ("a", widget("ssa-w-left", count=2, nested={"a": "b"}, tags=["x"], data={"k": "v"})),
        ("a", widget("ssa-w-left", nested={}, tags=[], data={})),
        ("a", widget("ssa-w-left")),
    ),
    "cr-two-managers-one-empties": _widget(
        ("a", widget("ssa-w-two", data={"k1": "v1"}, tags=["a"])),
        ("b", widget("ssa-w-two", data={"k2": "v2"}, tags=["b"])),
        ("a", widget("ssa-w-two", data={}, tags=[])),
    ),
    "cr-atomic-map": _widget(
        ("a", widget("ssa-w-atomic", selector={"matchLabels": {"x": "1"}})),
        ("b", widget("ssa-w-atomic", selector={"matchLabels": {"z": "2"}})),
        ("b:force", widget("ssa-w-atomic", selector={"matchLabels": {"z": "2"}})),
        ("a", widget("ssa-w-atomic", count=1)),
    ),
    "labels-empty-then-label": _cm(
        ("a", configmap("ssa-labels", metadata_labels={})),
        ("a", configmap("ssa-labels", metadata_labels={"app": "web"})),
        ("a", configmap("ssa-labels", metadata_labels={})),
        ("a", configmap("ssa-labels", metadata_labels={"tier": "db"})),
        view=LABELS,
    ),
    "finalizers-empty-and-back": _cm(
        ("a", configmap("ssa-finalizers", metadata_finalizers=["example.com/a"])),
        ("a", configmap("ssa-finalizers", metadata_finalizers=[])),
        ("a", configmap("ssa-finalizers", metadata_finalizers=["example.com/b"])),
        view=FINALIZERS,
    ),
    "containers-empty-and-back": _deploy(
        "ssa-containers", [WEB], [], [{"name": "log", "image": "fluentd"}]
    ),
    "container-ports-empty-and-back": _deploy(
        "ssa-ports",
        [{**WEB, "ports": [{"containerPort": 80}]}],
        [{**WEB, "ports": []}],
        [{**WEB, "ports": [{"containerPort": 8080}]}],
    ),
    "container-args-empty-and-back": _deploy(
        "ssa-args",
        [{**WEB, "args": ["a"]}],
        [{**WEB, "args": []}],
        [{**WEB, "args": ["b"]}],
        [WEB],
    ),
}


def _at(obj: Obj, path: tuple[str, ...]) -> Any:
    value: Any = obj
    for name in path:
        if not isinstance(value, dict) or name not in value:
            return "<absent>"
        value = value[name]
    if path == CONTAINERS[0] and isinstance(value, list):
        return [{k: c[k] for k in CONTAINER_FIELDS if k in c} for c in value]
    return value


def reduced(code: int, answer: Obj, view: tuple[tuple[str, ...], ...]) -> Obj:
    """What a step's answer is compared by. managedFields entries are put in
    the order kube gives them when their times fall in one second (their times
    are whether they have one), so that a step crossing a second compares the
    same; tests/unit/test_apply_sequences.py checks the order with a clock."""
    if answer.get("kind") == "Status":
        return {"code": code, "message": answer.get("message")}
    managed = [
        [e["manager"], e["operation"], "time" in e, e.get("fieldsV1")]
        for e in answer.get("metadata", {}).get("managedFields") or []
    ]
    return {
        "code": code,
        "object": {".".join(path): _at(answer, path) for path in view},
        "managedFields": sorted(managed, key=lambda e: (e[1], e[2], e[0])),
    }


def recorded() -> dict[str, list[Obj]]:
    """kube's answers to CASES, as `python -m tests.support.apply_cases` printed them."""
    text = (Path(__file__).parent / "server_side_apply_kube.json").read_bytes()
    answers: dict[str, list[Obj]] = orjson.loads(text)
    return answers


async def remove(session: aiohttp.ClientSession, path: str) -> None:
    """Delete the object, its finalizers first; wait until it is gone."""
    body = orjson.dumps({"metadata": {"finalizers": None}})
    async with session.patch(path, data=body, headers=MERGE):
        pass
    async with session.delete(path):
        pass
    for _ in range(100):
        async with session.get(path) as response:
            if response.status == 404:
                return
        await asyncio.sleep(0.1)
    raise AssertionError(f"{path} was not deleted")


async def served(session: aiohttp.ClientSession, collection: str) -> None:
    """Make the collection's CustomResourceDefinition, if it is one, and wait
    until its resources are served."""
    if collection != WIDGETS:
        return
    async with session.post(CRDS, json=WIDGET_CRD) as response:
        assert response.status in (201, 409), await response.text()
    for _ in range(100):
        async with session.get(collection) as response:
            if response.status == 200:
                return
        await asyncio.sleep(0.1)
    raise AssertionError(f"{collection} is not served")


async def run(session: aiohttp.ClientSession, case: Case) -> list[Obj]:
    """Apply the case's steps in order; each step's answer reduced."""
    await served(session, case.collection)
    name = case.steps[0][1]["metadata"]["name"]
    path = f"{case.collection}/{name}"
    await remove(session, path)
    results = []
    try:
        for who, configuration in case.steps:
            manager, _, force = who.partition(":")
            url = f"{path}?fieldManager={manager}" + ("&force=true" if force else "")
            body = yaml.safe_dump(configuration)
            async with session.patch(url, data=body, headers=APPLY) as response:
                answer = orjson.loads(await response.read())
                results.append(reduced(response.status, answer, case.view))
    finally:
        await remove(session, path)
    return results


if __name__ == "__main__":
    asyncio.run(record(run, CASES))
