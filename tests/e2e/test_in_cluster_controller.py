"""A controller written with strata.client, run as a pod would run it (issue
29, acceptance 3): its configuration is the in-cluster one (a service
account's token file, the cluster's CA and the namespace, where kube mounts
them, and KUBERNETES_SERVICE_HOST/PORT), the token is a legacy token Secret's
that the tokens controller filled in, and the account's Role lets it read
ConfigMaps in its namespace. Its informer works; what the Role does not grant
(writing a ConfigMap, reading Secrets, another namespace) is refused with
kube's 403.

The refusals are RBAC's, the gateway's default authorization mode."""

from __future__ import annotations

import asyncio
import base64
import contextlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from strata import client as k
from strata.dev import System
from tests.support.sessions import admin_session

NAMESPACE = "robots"
CONFIGMAPS = k.Resource(version="v1", resource="configmaps")
SECRETS = k.Resource(version="v1", resource="secrets")
RBAC_PATH = f"/apis/rbac.authorization.k8s.io/v1/namespaces/{NAMESPACE}"
Obj = dict[str, Any]


@pytest.fixture(scope="module")
def rbac_system(tmp_path_factory: pytest.TempPathFactory) -> Iterator[System]:
    home = tmp_path_factory.mktemp("in-cluster-home")
    system = System(home, gateway_port=0, env={"STRATA_AUTHORIZATION_MODE": "RBAC"})
    system.start()
    yield system
    system.stop()


async def _post(http: aiohttp.ClientSession, path: str, body: Obj) -> Obj:
    async with http.post(path, json=body) as response:
        answer: Obj = await response.json()
        assert response.status == 201, answer
        return answer


@pytest.fixture(scope="module")
async def mounted(rbac_system: System, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The account's token, CA and namespace as kube mounts them in a pod, from
    the legacy token Secret the tokens controller filled in."""
    ns = f"/api/v1/namespaces/{NAMESPACE}"
    async with admin_session(rbac_system) as http:
        await _post(http, "/api/v1/namespaces", {"metadata": {"name": NAMESPACE}})
        await _post(http, f"{ns}/serviceaccounts", {"metadata": {"name": "copier"}})
        role = {
            "metadata": {"name": "configmap-reader"},
            "rules": [
                {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]}
            ],
        }
        await _post(http, f"{RBAC_PATH}/roles", role)
        role_ref = {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role"}
        binding = {
            "metadata": {"name": "copier-reads"},
            "roleRef": {**role_ref, "name": "configmap-reader"},
            "subjects": [{"kind": "ServiceAccount", "name": "copier", "namespace": NAMESPACE}],
        }
        await _post(http, f"{RBAC_PATH}/rolebindings", binding)
        secret = {
            "metadata": {
                "name": "copier-token",
                "annotations": {"kubernetes.io/service-account.name": "copier"},
            },
            "type": "kubernetes.io/service-account-token",
        }
        await _post(http, f"{ns}/secrets", secret)
        data: Obj = {}
        async with asyncio.timeout(15):
            while len(data) < 3:
                async with http.get(f"{ns}/secrets/copier-token") as response:
                    data = (await response.json()).get("data") or {}
                await asyncio.sleep(0.1)
        await _post(http, f"{ns}/configmaps", {"metadata": {"name": "hello"}, "data": {"a": "1"}})
    directory = tmp_path_factory.mktemp("serviceaccount")
    for key in ("token", "ca.crt", "namespace"):
        (directory / key).write_bytes(base64.b64decode(data[key]))
    return directory


@pytest.fixture
async def rest(
    rbac_system: System, mounted: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> AsyncIterator[k.RestClient]:
    assert rbac_system.endpoints is not None
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", rbac_system.endpoints.gateway.rsplit(":", 1)[1])
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.kube/config: in-cluster it is
    config = k.load_config(directory=mounted)
    assert (config.namespace, config.token_file) == (NAMESPACE, mounted / "token")
    async with k.RestClient(config) as rest:
        yield rest


async def test_a_controller_with_a_service_account_token(rest: k.RestClient) -> None:
    dynamic = k.DynamicClient(rest)
    factory = k.SharedInformerFactory(dynamic, namespace=NAMESPACE)
    informer = factory.informer_for(CONFIGMAPS)
    seen: asyncio.Queue[str] = asyncio.Queue()
    informer.add_event_handler(
        k.EventHandler(on_add=lambda obj, *_: seen.put_nowait(obj["metadata"]["name"]))
    )
    factory.start()
    try:
        assert await factory.wait_for_cache_sync(15) == {CONFIGMAPS: True}
        async with asyncio.timeout(10):
            assert await seen.get() == "hello"
        assert informer.lister().namespaced(NAMESPACE).get("hello")["data"] == {"a": "1"}

        configmaps = dynamic.resource(CONFIGMAPS)
        copy = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "copy"}}
        with pytest.raises(k.Forbidden) as refused:
            await configmaps.create(copy, NAMESPACE)
        user = f"system:serviceaccount:{NAMESPACE}:copier"
        assert refused.value.message == (
            f'configmaps is forbidden: User "{user}" cannot create resource "configmaps" in API '
            f'group "" in the namespace "{NAMESPACE}"'
        )
        with pytest.raises(k.Forbidden) as refused:
            await dynamic.resource(SECRETS).list(NAMESPACE)
        assert refused.value.message == (
            f'secrets is forbidden: User "{user}" cannot list resource "secrets" in API group "" '
            f'in the namespace "{NAMESPACE}"'
        )
        with pytest.raises(k.Forbidden):
            await configmaps.list("default")
    finally:
        with contextlib.suppress(asyncio.CancelledError):
            await factory.shutdown()
