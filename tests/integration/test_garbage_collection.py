"""Garbage collection by ownerReferences through the real gateway and services:
background cascading (the default), orphaning, foreground deletion with
blockOwnerDeletion, dangling references, and kube's refusals of bad
DeleteOptions and ownerReferences."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import pytest

from strata.etcd import Etcd
from tests.support.registry_tester import (
    Obj,
    answer,
    configmap,
    gone,
    invalid,
    new_namespace,
    refused,
    unsupported,
    until,
)


@pytest.fixture(scope="module")
async def namespace(http: aiohttp.ClientSession) -> str:
    return await new_namespace(http, "gc")


def reference(owner: Obj, **fields: Any) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        **fields,
    }


async def family(
    http: aiohttp.ClientSession, namespace: str, name: str, **fields: Any
) -> tuple[str, Obj, str]:
    """An owner ConfigMap and one dependent: the collection path, the owner,
    and the dependent's path."""
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    owner = await answer(http, "POST", path, 201, json=configmap(f"{name}-owner"))
    metadata = {"ownerReferences": [reference(owner, **fields)]}
    await answer(http, "POST", path, 201, json=configmap(f"{name}-dependent", metadata))
    return path, owner, f"{path}/{name}-dependent"


async def test_dependents_follow_their_owner_by_default(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    path, _, dependent = await family(http, namespace, "background")
    await answer(http, "DELETE", f"{path}/background-owner", 200)
    await gone(http, dependent, within=15)


async def test_orphaned_dependents_stay_without_the_reference(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    path, _, dependent = await family(http, namespace, "orphan")
    deleted = await answer(
        http, "DELETE", f"{path}/orphan-owner", 200, json={"propagationPolicy": "Orphan"}
    )
    assert deleted["metadata"]["finalizers"] == ["orphan"]
    await gone(http, f"{path}/orphan-owner", within=15)
    left = await answer(http, "GET", dependent, 200)
    assert "ownerReferences" not in left["metadata"]


async def test_foreground_deletion_waits_for_blocking_dependents(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    path, _, dependent = await family(http, namespace, "fg", blockOwnerDeletion=True)
    # The dependent holds on until a finalizer of its own is removed.
    held = await answer(http, "GET", dependent, 200)
    held["metadata"]["finalizers"] = ["example.com/hold"]
    await answer(http, "PUT", dependent, 200, json=held)
    owner = f"{path}/fg-owner"
    marked = await answer(http, "DELETE", f"{owner}?propagationPolicy=Foreground", 200)
    assert marked["metadata"]["finalizers"] == ["foregroundDeletion"]
    assert marked["metadata"]["deletionTimestamp"]
    held = await until(http, dependent, lambda o: o["metadata"].get("deletionTimestamp"))
    await asyncio.sleep(2)  # rounds of the collector: the owner must still wait
    assert (await answer(http, "GET", owner, 200))["metadata"]["deletionTimestamp"]
    held["metadata"]["finalizers"] = []
    await answer(http, "PUT", dependent, 200, json=held)
    await gone(http, dependent)
    await gone(http, owner, within=15)


async def test_a_dangling_reference_is_removed(http: aiohttp.ClientSession, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    first = await answer(http, "POST", path, 201, json=configmap("first"))
    second = await answer(http, "POST", path, 201, json=configmap("second"))
    metadata = {"ownerReferences": [reference(first), reference(second)]}
    await answer(http, "POST", path, 201, json=configmap("shared", metadata))
    await answer(http, "DELETE", f"{path}/first", 200)
    left = await until(
        http, f"{path}/shared", lambda o: len(o["metadata"].get("ownerReferences", [])) == 1
    )
    assert left["metadata"]["ownerReferences"] == [reference(second)]


async def test_a_reference_to_another_uid_is_an_absent_owner(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    owner = await answer(http, "POST", path, 201, json=configmap("reborn"))
    stale = reference(owner, uid="00000000-0000-0000-0000-000000000000")
    await answer(
        http, "POST", path, 201, json=configmap("of-the-old", {"ownerReferences": [stale]})
    )
    await gone(http, f"{path}/of-the-old", within=15)
    await answer(http, "GET", f"{path}/reborn", 200)


async def test_bad_delete_options_are_refused(
    http: aiohttp.ClientSession, system_etcd: Etcd, namespace: str
) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    await answer(http, "POST", path, 201, json=configmap("kept"))
    status = await refused(
        http, system_etcd, "DELETE", f"{path}/kept", json={"propagationPolicy": "Sideways"}
    )
    assert (status["code"], status["reason"]) == (422, "Invalid")
    assert status["details"]["kind"] == "DeleteOptions"
    assert status["details"]["group"] == "meta.k8s.io"
    cause = unsupported(
        "propagationPolicy", '"Sideways"', "Foreground", "Background", "Orphan", "nil"
    )
    assert [(c["reason"], c["field"], c["message"]) for c in status["details"]["causes"]] == [cause]
    both = {"propagationPolicy": "Orphan", "orphanDependents": True}
    status = await refused(http, system_etcd, "DELETE", f"{path}/kept", json=both)
    causes = [(c["reason"], c["field"], c["message"]) for c in status["details"]["causes"]]
    assert causes == [
        invalid(
            "propagationPolicy",
            '"Orphan"',
            "orphanDependents and deletionPropagation cannot be both set",
        )
    ]
    status = await refused(
        http, system_etcd, "DELETE", f"{path}?propagationPolicy=Sideways", json={}
    )
    assert (status["code"], status["reason"]) == (422, "Invalid")
    status = await refused(http, system_etcd, "DELETE", f"{path}/kept?gracePeriodSeconds=soon")
    assert (status["code"], status["reason"]) == (400, "BadRequest")
    assert status["message"] == 'strconv.ParseInt: parsing "soon": invalid syntax'
    await answer(http, "GET", f"{path}/kept", 200)


async def test_a_grace_period_is_taken_and_changes_nothing(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    # No resource strata serves is deleted gracefully (kube's pods are), so a
    # grace period, as `kubectl delete --grace-period` sends, deletes at once.
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    await answer(http, "POST", path, 201, json=configmap("graceful"))
    await answer(http, "DELETE", f"{path}/graceful?gracePeriodSeconds=30", 200)
    await answer(http, "POST", path, 201, json=configmap("graceful"))
    await answer(http, "DELETE", f"{path}/graceful", 200, json={"gracePeriodSeconds": 0})
    async with http.get(f"{path}/graceful") as response:
        assert response.status == 404


async def test_bad_owner_references_are_refused(
    http: aiohttp.ClientSession, system_etcd: Etcd, namespace: str
) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    references = [
        {"apiVersion": "", "kind": "", "name": "", "uid": ""},
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "a", "uid": "1", "controller": True},
        {"apiVersion": "v1", "kind": "Secret", "name": "b", "uid": "2", "controller": True},
    ]
    body = configmap("owned", {"ownerReferences": references})
    status = await refused(http, system_etcd, "POST", path, json=body)
    causes = [(c["reason"], c["field"], c["message"]) for c in status["details"]["causes"]]
    field = "metadata.ownerReferences"
    assert causes[:4] == [
        invalid(f"{field}.apiVersion", '""', "version must not be empty"),
        invalid(f"{field}.kind", '""', "kind must not be empty"),
        invalid(f"{field}.name", '""', "name must not be empty"),
        invalid(f"{field}.uid", '""', "uid must not be empty"),
    ]
    assert causes[4][:2] == ("FieldValueInvalid", field)
    assert causes[4][2].endswith(
        'Only one reference can have Controller set to true. Found "true" in references for '
        "ConfigMap/a and Secret/b"
    )


async def test_a_cluster_scoped_dependent_of_a_namespaced_owner_is_collected(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    """Such a reference cannot be satisfied (kube treats the owner as absent),
    and it holds up nothing else the collector does."""
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    owner = await answer(http, "POST", path, 201, json=configmap("scoped-owner"))
    roles = "/apis/rbac.authorization.k8s.io/v1/clusterroles"
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": f"{namespace}-owned", "ownerReferences": [reference(owner)]},
    }
    await answer(http, "POST", roles, 201, json=role)
    _, _, dependent = await family(http, namespace, "alongside")
    await answer(http, "DELETE", f"{path}/alongside-owner", 200)
    await gone(http, f"{roles}/{namespace}-owned", within=15)
    await gone(http, dependent, within=15)
    await answer(http, "GET", f"{path}/scoped-owner", 200)
