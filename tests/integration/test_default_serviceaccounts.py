"""Every namespace's `default` ServiceAccount, as kube-controller-manager's
serviceaccount controller keeps it: made in a new namespace and in those there
at start, made again when deleted, never made in a Terminating namespace.

kube's object, recorded with `KUBE_WITH_KCM=1 ../shared/kube/with_kube.sh bash
-c 'kubectl create ns sa-probe; kubectl get --raw
/api/v1/namespaces/sa-probe/serviceaccounts/default'` (v1.36.2):
{"kind":"ServiceAccount","apiVersion":"v1","metadata":{"name":"default",
"namespace":"sa-probe","uid":"...","resourceVersion":"266",
"creationTimestamp":"..."}}: no secrets, no automountServiceAccountToken, no
managedFields (its only fields are the name's). Deleting it in an Active
namespace brought a new one (a new uid) within a second; deleting it in a
Terminating namespace (held by a ConfigMap's finalizer) left it gone.
"""

from __future__ import annotations

import asyncio

import aiohttp

from tests.support.registry_tester import Obj, answer, configmap, gone, new_namespace, until

SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
# kube's controller answered within a second; strata's is given room for a
# loaded machine.
WITHIN = 15


def accounts(namespace: str) -> str:
    return f"/api/v1/namespaces/{namespace}/serviceaccounts"


async def default_account(http: aiohttp.ClientSession, namespace: str) -> Obj:
    """The namespace's `default`, once the controller has made it."""
    return await until(http, f"{accounts(namespace)}/default", bool, WITHIN, absent_ok=True)


async def test_a_new_namespace_gets_a_default_serviceaccount_shaped_as_kubes(
    http: aiohttp.ClientSession,
) -> None:
    namespace = await new_namespace(http, "sa")
    made = await default_account(http, namespace)
    assert list(made) == ["kind", "apiVersion", "metadata"]
    assert (made["apiVersion"], made["kind"]) == ("v1", "ServiceAccount")
    metadata = made["metadata"]
    assert set(metadata) == {"name", "namespace", "uid", "resourceVersion", "creationTimestamp"}
    assert (metadata["name"], metadata["namespace"]) == ("default", namespace)
    listed = await answer(http, "GET", accounts(namespace), 200)
    assert [a["metadata"]["name"] for a in listed["items"]] == ["default"]


async def test_the_system_namespaces_have_one_from_the_start(
    http: aiohttp.ClientSession,
) -> None:
    for namespace in SYSTEM_NAMESPACES:
        assert (await default_account(http, namespace))["metadata"]["name"] == "default"


async def test_a_deleted_default_serviceaccount_is_made_again(
    http: aiohttp.ClientSession,
) -> None:
    namespace = await new_namespace(http, "sa-again")
    first = await default_account(http, namespace)
    deleted = await answer(http, "DELETE", f"{accounts(namespace)}/default", 200)
    assert deleted["metadata"]["uid"] == first["metadata"]["uid"]
    again = await until(
        http,
        f"{accounts(namespace)}/default",
        lambda sa: sa["metadata"]["uid"] != first["metadata"]["uid"],
        WITHIN,
        absent_ok=True,
    )
    assert again["metadata"]["name"] == "default"


async def test_a_terminating_namespace_gets_none(http: aiohttp.ClientSession) -> None:
    namespace = await new_namespace(http, "sa-term")
    await default_account(http, namespace)
    held = f"/api/v1/namespaces/{namespace}/configmaps/held"
    body = configmap("held", {"finalizers": ["example.com/hold"]})
    await answer(http, "POST", f"/api/v1/namespaces/{namespace}/configmaps", 201, json=body)
    await answer(http, "DELETE", f"/api/v1/namespaces/{namespace}", 200)

    # The namespace controller deletes the account, and the held ConfigMap
    # keeps the namespace Terminating; no new `default` comes meanwhile.
    await gone(http, f"{accounts(namespace)}/default", WITHIN)
    await asyncio.sleep(2)  # several of the controller's rounds
    async with http.get(f"{accounts(namespace)}/default") as response:
        assert response.status == 404, await response.read()
    current = await answer(http, "GET", f"/api/v1/namespaces/{namespace}", 200)
    assert current["status"]["phase"] == "Terminating"

    cm = await answer(http, "GET", held, 200)
    cm["metadata"]["finalizers"] = []
    await answer(http, "PUT", held, 200, json=cm)
    await gone(http, f"/api/v1/namespaces/{namespace}", WITHIN)
