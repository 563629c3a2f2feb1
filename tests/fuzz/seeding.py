"""Setting a run up on its own system and keeping it fit while requests
mangle it: a namespace and a CRD of the run's own, one valid object of every
kind that can be created (the targets the requests name), the document and
the discovery the operations come from; and, before each delete, a victim for
it to delete, so that deletes go all the way and the targets stay."""

from __future__ import annotations

import itertools
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from tests.fuzz import operations, seeds
from tests.fuzz.client import Gateway
from tests.fuzz.drafts import VICTIM, Context, Draft, request, template
from tests.fuzz.operations import Operation

Doc = dict[str, Any]


@dataclass
class Run:
    gateway: Gateway
    context: Context
    operations: list[Operation]
    prefix: str
    group: str
    counter: Iterator[int] = field(default_factory=itertools.count)
    covered: dict[tuple[str, str], int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def send(self, draft: Draft) -> None:
        """Send one fuzzed request (after creating its victim) and judge it."""
        draft = self._with_victim(draft)
        with self.lock:
            key = draft.operation.key
            self.covered[key] = self.covered.get(key, 0) + 1
        self.gateway.exchange(request(draft))

    def _victim_name(self, operation: Operation) -> str:
        n = next(self.counter)
        if operation.resource == "customresourcedefinitions":
            return f"{seeds.CRD_PLURAL}.v{n}.{self.group}"
        return f"{self.prefix}-victim-{n}"

    def _with_victim(self, draft: Draft) -> Draft:
        operation = draft.operation
        named = draft.path.get("name") == VICTIM
        if not named and not draft.victim:
            return draft
        name = self._victim_name(operation)
        collection = operation.path.split("/{name}")[0]
        if draft.path.get("namespace", self.context.namespace) == self.context.namespace:
            body = template(operation, self.context, name)
            body["metadata"]["labels"] = {seeds.VICTIM_LABEL: "yes"}
            path = collection.replace("{namespace}", self.context.namespace)
            self.gateway.call("POST", path, body)
        return replace(draft, path={**draft.path, "name": name}) if named else draft


def _wait(gateway: Gateway, path: str, within: float = 30.0) -> Any:
    deadline = time.monotonic() + within
    while True:
        status, body = gateway.call("GET", path)
        if status == 200:
            return body
        assert time.monotonic() < deadline, f"{path}: {status} {body}"
        time.sleep(0.2)


def _discovered(gateway: Gateway) -> list[tuple[str, str, list[str]]]:
    """(group-version path, resource, verbs) of everything discovery lists."""
    prefixes = ["/api/v1"]
    for group in _wait(gateway, "/apis")["groups"]:
        prefixes += [f"/apis/{v['groupVersion']}" for v in group["versions"]]
    found = []
    for prefix in prefixes:
        for resource in _wait(gateway, prefix)["resources"]:
            found.append((prefix, resource["name"], resource["verbs"]))
    return found


def _document(gateway: Gateway, group: str) -> Doc:
    """/openapi/v2 once it has the run's custom resource."""
    deadline = time.monotonic() + 30
    while True:
        document: Doc = _wait(gateway, "/openapi/v2")
        if any(f"/apis/{group}/" in path for path in document["paths"]):
            return document
        assert time.monotonic() < deadline, "the CRD's paths never came into /openapi/v2"
        time.sleep(0.2)


def _seed(gateway: Gateway, posts: list[Operation], context: Context) -> None:
    """A target of every kind that can be created (and two more ConfigMaps,
    for a list to continue)."""
    for operation in posts:
        if operation.resource in ("namespaces", "customresourcedefinitions"):
            continue
        body = template(operation, context, context.target(operation.resource))
        path = operation.path.replace("{namespace}", context.namespace)
        status, answer = gateway.call("POST", path, body)
        assert status in (200, 201), (path, status, answer)
    for extra in ("target-2", "target-3"):
        body = seeds.valid("v1", "ConfigMap", extra, context.namespace)
        gateway.call("POST", f"/api/v1/namespaces/{context.namespace}/configmaps", body)


def _knowns(gateway: Gateway, namespace: str) -> tuple[list[str], list[str]]:
    """Resource versions and a continue token that are real."""
    _, listed = gateway.call("GET", f"/api/v1/namespaces/{namespace}/configmaps?limit=1")
    meta = listed["metadata"]
    versions = [meta["resourceVersion"], listed["items"][0]["metadata"]["resourceVersion"]]
    return versions, [meta.get("continue", "")]


def prepare(gateway: Gateway) -> Run:
    """The run's namespace, CRD and targets, and the operations to fuzz."""
    prefix = f"fuzz-{uuid.uuid4().hex[:6]}"
    group = f"{prefix}.example.com"
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": prefix}}
    assert gateway.call("POST", "/api/v1/namespaces", namespace)[0] == 201
    crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    assert gateway.call("POST", crds, seeds.crd(group))[0] == 201
    _wait(gateway, f"/apis/{group}/v1/namespaces/{prefix}/{seeds.CRD_PLURAL}")
    document = _document(gateway, group)
    documented = operations.documented(document)
    targets = {
        "namespaces": prefix,
        "customresourcedefinitions": f"{seeds.CRD_PLURAL}.{group}",
        "clusterroles": f"{prefix}-target",
        "clusterrolebindings": f"{prefix}-target",
    }
    context = Context(namespace=prefix, targets=targets, versions=[], continues=[], definitions={})
    _seed(gateway, [o for o in documented if o.action == "post"], context)
    versions, continues = _knowns(gateway, prefix)
    context = replace(
        context, versions=versions, continues=continues, definitions=document["definitions"]
    )
    served = documented + operations.undocumented(documented, _discovered(gateway))
    return Run(gateway=gateway, context=context, operations=served, prefix=prefix, group=group)
