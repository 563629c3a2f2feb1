"""What a DELETE answers, for every resource strata serves, against a table of
kube-apiserver v1.36.2's answers: the deleted object (kube's registries that
set ReturnDeletedObject: services, serviceaccounts), a Success Status naming
it (every other resource), or the object marked with a deletionTimestamp (one
that finalizers hold: a namespace and a CRD always, anything once a finalizer
or a propagationPolicy's is on it). Generated clients type the answer, so the
choice is part of the API.

KUBE is what kube answered, recorded by creating one object of each resource
and deleting it (plain, dryRun=All, propagationPolicy=Foreground and Orphan,
orphanDependents=false, and each with a finalizer of a client's on) from a
script run as `../shared/kube/with_kube.sh bash -c 'python probe.py MODE'`,
and reading its 200/202 body. A resource that discovery lists and KUBE does
not fails test_every_served_resource_has_its_kube_answer: a new resource must
bring kube's answer with it.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass

import aiohttp
import orjson
import pytest

from tests.support.registry_tester import Obj, answer, new_namespace, until

OBJECT = "object"  # the object as it was when deleted
STATUS = "status"  # a Success Status naming it
MARKED = "marked"  # the object, marked for deletion: finalizers hold it

FOREGROUND = "foregroundDeletion"
ORPHAN = "orphan"
HOLD = "example.com/hold"
CRD_CLEANUP = "customresourcecleanup.apiextensions.k8s.io"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
CUSTOM = ("custom", "")  # any custom resource, namespaced or cluster-scoped
GROUP = "delete-answers.example.com"


@dataclass(frozen=True)
class Kube:
    """kube's answers to one resource's DELETE: plain (dryRun=All answered
    the same for every resource), with propagationPolicy=Foreground, and with
    Orphan; and whether a marked object gets deletionGracePeriodSeconds: 0
    (the generic registry's) or only its deletionTimestamp (the namespace and
    CRD registries' own Delete)."""

    plain: str
    foreground: str = MARKED
    orphan: str = MARKED
    grace_period: bool = True
    # Whether propagationPolicy puts its finalizer on (events: the policy is
    # Unsupported; CRDs: their registry marks them without it).
    collected: bool = True


KUBE: dict[tuple[str, str], Kube] = {
    ("", "namespaces"): Kube(MARKED, grace_period=False),
    ("", "configmaps"): Kube(STATUS),
    ("", "secrets"): Kube(STATUS),
    ("", "serviceaccounts"): Kube(OBJECT),
    ("", "services"): Kube(OBJECT),
    ("", "endpoints"): Kube(STATUS),
    ("", "events"): Kube(STATUS, foreground=STATUS, orphan=STATUS, collected=False),
    ("coordination.k8s.io", "leases"): Kube(STATUS),
    ("apps", "deployments"): Kube(STATUS),
    ("rbac.authorization.k8s.io", "roles"): Kube(STATUS),
    ("rbac.authorization.k8s.io", "clusterroles"): Kube(STATUS),
    ("rbac.authorization.k8s.io", "rolebindings"): Kube(STATUS),
    ("rbac.authorization.k8s.io", "clusterrolebindings"): Kube(STATUS),
    ("apiextensions.k8s.io", "customresourcedefinitions"): Kube(
        MARKED, grace_period=False, collected=False
    ),
    CUSTOM: Kube(STATUS),
}


@dataclass(frozen=True)
class Served:
    group: str
    resource: str
    kind: str
    namespaced: bool
    body: Obj

    @property
    def kube(self) -> Kube:
        return KUBE[CUSTOM if self.group == GROUP else (self.group, self.resource)]

    def collection(self, namespace: str) -> str:
        base = f"/apis/{self.group}/v1" if self.group else "/api/v1"
        scope = f"/namespaces/{namespace}" if self.namespaced else ""
        return f"{base}{scope}/{self.resource}"

    def __str__(self) -> str:
        return self.resource


_ROLE_REF = {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"}
_POD = {"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}}
_CRD_SCHEMA = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}


def _crd(plural: str, kind: str, scope: str) -> Obj:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "scope": scope,
            "names": {"plural": plural, "singular": plural[:-1], "kind": kind},
            "versions": [{"name": "v1", "served": True, "storage": True, "schema": _CRD_SCHEMA}],
        },
    }


SERVED = (
    Served("", "namespaces", "Namespace", False, {}),
    Served("", "configmaps", "ConfigMap", True, {}),
    Served("", "secrets", "Secret", True, {}),
    Served("", "serviceaccounts", "ServiceAccount", True, {}),
    Served("", "services", "Service", True, {"spec": {"ports": [{"port": 80}]}}),
    Served("", "endpoints", "Endpoints", True, {}),
    Served("", "events", "Event", True, {"involvedObject": {"kind": "Pod", "name": "p"}}),
    Served("coordination.k8s.io", "leases", "Lease", True, {}),
    Served(
        "apps",
        "deployments",
        "Deployment",
        True,
        {"spec": {"selector": {"matchLabels": {"app": "x"}}, "template": _POD}},
    ),
    Served("rbac.authorization.k8s.io", "roles", "Role", True, {}),
    Served("rbac.authorization.k8s.io", "clusterroles", "ClusterRole", False, {}),
    Served(
        "rbac.authorization.k8s.io", "rolebindings", "RoleBinding", True, {"roleRef": _ROLE_REF}
    ),
    Served(
        "rbac.authorization.k8s.io",
        "clusterrolebindings",
        "ClusterRoleBinding",
        False,
        {"roleRef": _ROLE_REF},
    ),
    Served(
        "apiextensions.k8s.io",
        "customresourcedefinitions",
        "CustomResourceDefinition",
        False,
        {},
    ),
    Served(GROUP, "widgets", "Widget", True, {}),
    Served(GROUP, "gadgets", "Gadget", False, {}),
)


@pytest.fixture(scope="module")
async def namespace(http: aiohttp.ClientSession) -> AsyncIterator[str]:
    """A namespace of this module's, with the two CRDs its custom resources are of."""
    for crd in (_crd("widgets", "Widget", "Namespaced"), _crd("gadgets", "Gadget", "Cluster")):
        await answer(http, "POST", CRDS, 201, json=crd)
        name = crd["metadata"]["name"]
        await until(http, f"{CRDS}/{name}", _established, within=30)
    yield await new_namespace(http, "delete-answers")
    for plural in ("widgets", "gadgets"):
        await answer(http, "DELETE", f"{CRDS}/{plural}.{GROUP}", 200)


def _established(crd: Obj) -> bool:
    conditions = (crd.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)


def _body(served: Served, namespace: str, name: str, finalizers: list[str]) -> Obj:
    metadata: Obj = {"name": name}
    if finalizers:
        metadata["finalizers"] = finalizers
    body: Obj = {"apiVersion": "v1", "kind": served.kind, "metadata": metadata, **served.body}
    if served.group:
        body["apiVersion"] = f"{served.group}/v1"
    if served.resource == "events":
        body["involvedObject"] = {**served.body["involvedObject"], "namespace": namespace}
    if served.resource == "customresourcedefinitions":
        made = _crd(f"{name.replace('-', '')}s", f"K{name.replace('-', '')}", "Namespaced")
        body["metadata"]["name"] = made["metadata"]["name"]
        body["spec"] = made["spec"]
    return body


async def _create(
    http: aiohttp.ClientSession, served: Served, namespace: str, finalizers: list[str]
) -> tuple[str, Obj]:
    """A new object of served's (its path, and the object as created)."""
    name = f"x{uuid.uuid4().hex[:10]}"
    body = _body(served, namespace, name, finalizers)
    created = await answer(http, "POST", served.collection(namespace), 201, json=body)
    return f"{served.collection(namespace)}/{created['metadata']['name']}", created


async def _clean_up(http: aiohttp.ClientSession, path: str) -> None:
    """Take every finalizer a client may take off, so that the object goes."""
    while True:
        async with http.get(path) as response:
            if response.status == 404:
                return
            current: Obj = orjson.loads(await response.read())
        if current["metadata"].get("finalizers"):
            current["metadata"]["finalizers"] = []
            async with http.put(path, json=current) as response:
                if response.status == 409:  # a controller's write came first
                    continue
                assert response.status in (200, 404), await response.read()
        async with http.delete(path) as response:
            assert response.status in (200, 404), await response.read()
        return


def _status(served: Served, created: Obj) -> Obj:
    """The Success Status kube answers, its keys in kube's order."""
    details: Obj = {"name": created["metadata"]["name"]}
    if served.group:
        details["group"] = served.group
    details |= {"kind": served.resource, "uid": created["metadata"]["uid"]}
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": details,
    }


async def _delete(
    http: aiohttp.ClientSession, path: str, query: str, code: int | None = 200
) -> tuple[Obj, bytes]:
    """The answer (and its bytes) to a DELETE that must answer code (None: any
    success, for the caller to look at)."""
    async with http.delete(f"{path}{query}") as response:
        raw = await response.read()
        assert response.status == code if code is not None else response.ok, raw
    return orjson.loads(raw), raw


def _check(
    served: Served,
    expected: str,
    created: Obj,
    got: Obj,
    raw: bytes,
    finalizers: list[str],
    *,
    dry_run: bool = False,
) -> None:
    """got is the answer kube gives (expected), given the object's
    finalizers once marked."""
    if expected == STATUS:
        status = _status(served, created)
        assert got == status
        assert raw.rstrip(b"\n") == orjson.dumps(status)  # kube's key order
        return
    assert (got["kind"], got["metadata"]["uid"]) == (served.kind, created["metadata"]["uid"])
    metadata = got["metadata"]
    if expected == OBJECT:
        # As kube's: the object as it was, at the revision of its deletion (a
        # dry run's: as it is).
        version, before = (
            int(metadata["resourceVersion"]),
            int(created["metadata"]["resourceVersion"]),
        )
        assert version == before if dry_run else version > before
        assert got == {**created, "metadata": {**created["metadata"], **metadata}}
        assert {**metadata, "resourceVersion": ""} == {
            **created["metadata"],
            "resourceVersion": "",
        }
        return
    assert metadata["deletionTimestamp"]
    # kube's namespace registry orders the finalizers as a Go map happens to.
    assert sorted(metadata.get("finalizers") or []) == sorted(finalizers), metadata
    grace = metadata.get("deletionGracePeriodSeconds")
    assert grace == (0 if served.kube.grace_period else None), metadata
    if served.resource == "namespaces":
        assert got["status"]["phase"] == "Terminating"


def _own(served: Served) -> list[str]:
    """The finalizer a resource's own deletion puts on."""
    return [CRD_CLEANUP] if served.resource == "customresourcedefinitions" else []


@pytest.mark.parametrize("served", SERVED, ids=str)
@pytest.mark.parametrize("dry_run", [False, True], ids=["plain", "dry-run"])
async def test_delete_answers_as_kube_does(
    http: aiohttp.ClientSession, namespace: str, served: Served, dry_run: bool
) -> None:
    path, created = await _create(http, served, namespace, [])
    try:
        got, raw = await _delete(http, path, "?dryRun=All" if dry_run else "")
        _check(served, served.kube.plain, created, got, raw, _own(served), dry_run=dry_run)
        if dry_run:  # nothing changed (a CRD's controller may have written its status)
            kept = await answer(http, "GET", path, 200)
            assert "deletionTimestamp" not in kept["metadata"]
            assert kept["metadata"].get("finalizers") == created["metadata"].get("finalizers")
            if served.resource != "customresourcedefinitions":
                assert kept == created
    finally:
        await _clean_up(http, path)


@pytest.mark.parametrize("served", SERVED, ids=str)
@pytest.mark.parametrize("policy", ["Foreground", "Orphan"])
async def test_propagation_policy_answers_as_kube_does(
    http: aiohttp.ClientSession, namespace: str, served: Served, policy: str
) -> None:
    path, created = await _create(http, served, namespace, [])
    try:
        got, raw = await _delete(http, path, f"?propagationPolicy={policy}")
        expected = served.kube.foreground if policy == "Foreground" else served.kube.orphan
        added = FOREGROUND if policy == "Foreground" else ORPHAN
        finalizers = [added] if served.kube.collected else []
        _check(served, expected, created, got, raw, finalizers + _own(served))
    finally:
        await _clean_up(http, path)


@pytest.mark.parametrize("served", SERVED, ids=str)
@pytest.mark.parametrize("policy", ["", "Foreground", "Background"])
async def test_an_object_with_finalizers_is_answered_marked(
    http: aiohttp.ClientSession, namespace: str, served: Served, policy: str
) -> None:
    """kube answers every resource's held object with the object, 200."""
    path, created = await _create(http, served, namespace, [HOLD])
    try:
        query = f"?propagationPolicy={policy}" if policy else ""
        got, raw = await _delete(http, path, query)
        foreground = [FOREGROUND] if policy == "Foreground" and served.kube.collected else []
        _check(served, MARKED, created, got, raw, [HOLD, *foreground, *_own(served)])
    finally:
        await _clean_up(http, path)


def _orphan_false(served: Served, held: bool) -> tuple[str, list[str]]:
    """kube's answer to orphanDependents=false, and the marked object's
    finalizers: the generic registry adds none (it only drops `orphan`); the
    namespace registry's asks for foregroundDeletion."""
    held_by = [HOLD] if held else []
    if served.resource == "namespaces":
        return MARKED, [*held_by, FOREGROUND]
    return MARKED if held else served.kube.plain, [*held_by, *_own(served)]


@pytest.mark.parametrize("served", SERVED, ids=str)
@pytest.mark.parametrize("held", [False, True], ids=["", "held"])
async def test_orphan_dependents_false_answers_as_kube_does(
    http: aiohttp.ClientSession, namespace: str, served: Served, held: bool
) -> None:
    path, created = await _create(http, served, namespace, [HOLD] if held else [])
    try:
        got, raw = await _delete(http, path, "?orphanDependents=false", code=None)
        expected, finalizers = _orphan_false(served, held)
        _check(served, expected, created, got, raw, finalizers)
    finally:
        await _clean_up(http, path)


# Where kube answered 202: every held object, and a namespace or a CRD, which
# their own finalizers hold.
ACCEPTED = [(s, True) for s in SERVED] + [
    (s, False) for s in SERVED if s.resource in ("namespaces", "customresourcedefinitions")
]


@pytest.mark.parametrize(
    ("served", "held"), ACCEPTED, ids=[f"{s}{'-held' if h else ''}" for s, h in ACCEPTED]
)
async def test_orphan_dependents_false_on_a_marked_object_is_accepted(
    http: aiohttp.ClientSession, namespace: str, served: Served, held: bool
) -> None:
    path, _ = await _create(http, served, namespace, [HOLD] if held else [])
    try:
        await _delete(http, path, "?orphanDependents=false", code=202)
    finally:
        await _clean_up(http, path)


async def test_every_served_resource_has_its_kube_answer(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    """Every resource discovery lists as deletable (custom resources aside) is in
    KUBE and in SERVED, so a resource added to strata must bring kube's answer
    along; a create-only one (the reviews) is answered as kube answers a DELETE
    it has no route for (test_a_create_only_resource_takes_no_delete)."""
    crds = (await answer(http, "GET", CRDS, 200))["items"]
    custom = {(c["spec"]["group"], c["spec"]["names"]["plural"]) for c in crds}
    listed: set[tuple[str, str]] = set()
    groups = await answer(http, "GET", "/apis", 200)
    paths = ["/api/v1"] + [
        f"/apis/{v['groupVersion']}" for g in groups["groups"] for v in g["versions"]
    ]
    for path in paths:
        found = await answer(http, "GET", path, 200)
        group = found["groupVersion"].rpartition("/")[0]
        listed |= {
            (group, r["name"])
            for r in found["resources"]
            if "/" not in r["name"] and "delete" in r["verbs"]
        }
    built_in = listed - custom
    assert built_in and built_in <= set(KUBE), sorted(built_in - set(KUBE))
    assert {(s.group, s.resource) for s in SERVED if s.group != GROUP} == built_in
    assert {(s.group, s.resource) for s in SERVED if s.group == GROUP} <= custom


@pytest.mark.parametrize(
    ("path", "code", "message"),
    [
        # Recorded from kube v1.36: a named path has no route, a collection no
        # DELETE.
        (
            "/apis/authentication.k8s.io/v1/tokenreviews/x",
            404,
            "the server could not find the requested resource",
        ),
        (
            "/apis/authorization.k8s.io/v1/namespaces/default/localsubjectaccessreviews/x",
            404,
            "the server could not find the requested resource",
        ),
        (
            "/apis/authorization.k8s.io/v1/subjectaccessreviews",
            405,
            "the server does not allow this method on the requested resource",
        ),
    ],
)
async def test_a_create_only_resource_takes_no_delete(
    http: aiohttp.ClientSession, path: str, code: int, message: str
) -> None:
    assert (await answer(http, "DELETE", path, code))["message"] == message
