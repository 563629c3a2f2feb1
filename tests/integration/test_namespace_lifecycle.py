"""Namespace deletion as kube does it: the namespace turns Terminating, takes no
new content, is emptied of everything in it (objects with finalizers keep it
until they go), and then goes itself."""

from __future__ import annotations

import asyncio

import aiohttp

from strata.etcd import Etcd
from tests.support.registry_tester import answer, configmap, gone, new_namespace, refused, until


async def test_a_deleted_namespace_terminates_empties_and_goes(
    http: aiohttp.ClientSession, system_etcd: Etcd
) -> None:
    namespace = await new_namespace(http, "life")
    base = f"/api/v1/namespaces/{namespace}"
    await answer(http, "POST", f"{base}/configmaps", 201, json=configmap("a"))
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}
    await answer(http, "POST", f"{base}/secrets", 201, json=secret)
    # Something in it holds it until that something goes.
    await answer(
        http, "POST", f"{base}/configmaps", 201,
        json=configmap("held", metadata={"finalizers": ["example.com/hold"]}),
    )  # fmt: skip

    deleting = await answer(http, "DELETE", base, 200)
    assert deleting["status"]["phase"] == "Terminating"
    assert deleting["metadata"]["deletionTimestamp"]

    # The namespace controller is emptying the namespace meanwhile.
    refusal = await refused(
        http, system_etcd, "POST", f"{base}/configmaps", json=configmap("b"),
        untouched=f"/registry/configmaps/{namespace}/b".encode(),
    )  # fmt: skip
    assert (refusal["code"], refusal["reason"]) == (403, "Forbidden")
    assert refusal["message"] == (
        f'configmaps "b" is forbidden: unable to create new content in namespace {namespace} '
        "because it is being terminated"
    )
    assert refusal["details"]["causes"] == [
        {
            "reason": "NamespaceTerminating",
            "message": f"namespace {namespace} is being terminated",
            "field": "metadata.namespace",
        }
    ]

    await gone(http, f"{base}/configmaps/a")
    await gone(http, f"{base}/secrets/s")
    held = await answer(http, "GET", f"{base}/configmaps/held", 200)
    assert held["metadata"]["deletionTimestamp"]
    await asyncio.sleep(1.5)  # a few controller rounds: the namespace stays
    assert (await answer(http, "GET", base, 200))["status"]["phase"] == "Terminating"

    held["metadata"]["finalizers"] = []
    await answer(http, "PUT", f"{base}/configmaps/held", 200, json=held)
    await gone(http, base)


async def test_system_namespaces_may_not_be_deleted(
    http: aiohttp.ClientSession, system_etcd: Etcd
) -> None:
    for name in ("default", "kube-system", "kube-public"):
        body = await refused(http, system_etcd, "DELETE", f"/api/v1/namespaces/{name}")
        assert (body["code"], body["reason"]) == (403, "Forbidden")
        assert body["message"] == (
            f'namespaces "{name}" is forbidden: this namespace may not be deleted'
        )


async def test_the_finalize_subresource_holds_and_releases_a_namespace(
    http: aiohttp.ClientSession, system_etcd: Etcd
) -> None:
    namespace = await new_namespace(http, "fin")
    path = f"/api/v1/namespaces/{namespace}"
    obj = await answer(http, "GET", path, 200)
    obj["spec"]["finalizers"] = ["kubernetes", "example.com/wait"]
    obj["metadata"]["labels"]["ignored"] = "by-finalize"
    finalized = await answer(http, "PUT", f"{path}/finalize", 200, json=obj)
    assert finalized["spec"]["finalizers"] == ["kubernetes", "example.com/wait"]
    assert "ignored" not in finalized["metadata"]["labels"]
    bad = {**finalized, "spec": {"finalizers": ["kubernetes", "no-domain"]}}
    status = await refused(http, system_etcd, "PUT", f"{path}/finalize", json=bad)
    assert (status["code"], status["reason"]) == (422, "Invalid")
    assert [(c["field"], c["message"]) for c in status["details"]["causes"]] == [
        (
            "spec.finalizers[1]",
            'Invalid value: "no-domain": name is neither a standard finalizer name nor is it '
            "fully qualified",
        )
    ]
    status = await refused(http, system_etcd, "GET", f"{path}/finalize")
    assert (status["code"], status["reason"]) == (405, "MethodNotAllowed")
    await answer(http, "DELETE", path, 200)

    # The lifecycle controller removes its own finalizer; the other one holds on.
    def only_ours_left(ns: dict[str, object]) -> bool:
        return ns["spec"] == {"finalizers": ["example.com/wait"]}

    held = await until(http, path, only_ours_left)
    assert held["status"]["phase"] == "Terminating"
    held["spec"]["finalizers"] = []
    await answer(http, "PUT", f"{path}/finalize", 200, json=held)
    await gone(http, path)
