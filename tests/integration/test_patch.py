"""PATCH through the real gateway and services: each patch type, patches of
subresources, the resourceVersion a patch may pin, concurrent patches that
all land, and refused patches that change nothing."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import orjson
import pytest

from strata.etcd import Etcd
from tests.support.registry_tester import answer, configmap, new_namespace, refused

MERGE = {"Content-Type": "application/merge-patch+json"}
STRATEGIC = {"Content-Type": "application/strategic-merge-patch+json"}
JSON_PATCH = {"Content-Type": "application/json-patch+json"}


@pytest.fixture(scope="module")
async def namespace(http: aiohttp.ClientSession) -> str:
    return await new_namespace(http, "patch")


async def patch(
    http: aiohttp.ClientSession, path: str, headers: dict[str, str], body: Any, code: int = 200
) -> dict[str, Any]:
    return await answer(http, "PATCH", path, code, data=orjson.dumps(body), headers=headers)


async def _configmap(http: aiohttp.ClientSession, namespace: str, name: str) -> str:
    collection = f"/api/v1/namespaces/{namespace}/configmaps"
    await answer(http, "POST", collection, 201, json=configmap(name, data={"a": "1"}))
    return f"{collection}/{name}"


async def test_each_patch_type_changes_the_object(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    path = await _configmap(http, namespace, "types")
    merged = await patch(http, path, MERGE, {"data": {"a": None, "b": "2"}})
    assert merged["data"] == {"b": "2"}
    strategic = await patch(http, path, STRATEGIC, {"metadata": {"labels": {"x": "y"}}})
    assert strategic["metadata"]["labels"] == {"x": "y"}
    assert strategic["data"] == {"b": "2"}
    jsonpatched = await patch(
        http, path, JSON_PATCH, [{"op": "add", "path": "/data/c", "value": "3"}]
    )
    assert jsonpatched["data"] == {"b": "2", "c": "3"}
    assert int(jsonpatched["metadata"]["resourceVersion"]) > int(
        merged["metadata"]["resourceVersion"]
    )
    assert await answer(http, "GET", path, 200) == jsonpatched


async def test_refused_patches_change_nothing(
    http: aiohttp.ClientSession, system_etcd: Etcd, namespace: str
) -> None:
    path = await _configmap(http, namespace, "refusals")
    before = await answer(http, "GET", path, 200)

    async def refusal(headers: dict[str, str], body: bytes) -> dict[str, Any]:
        return await refused(http, system_etcd, "PATCH", path, data=body, headers=headers)

    missing = orjson.dumps([{"op": "remove", "path": "/data/none"}])
    status = await refusal(JSON_PATCH, missing)
    assert (status["code"], status["reason"]) == (422, "Invalid")
    status = await refusal(MERGE, b"{not json")
    assert (status["code"], status["reason"]) == (400, "BadRequest")
    status = await refusal({"Content-Type": "text/plain"}, b"{}")
    assert (status["code"], status["reason"]) == (415, "UnsupportedMediaType")
    invalid_key = orjson.dumps({"data": {"bad key": "x"}})
    status = await refusal(MERGE, invalid_key)
    assert (status["code"], status["reason"]) == (422, "Invalid")
    assert status["details"]["causes"][0]["field"] == "data[bad key]"
    stale = orjson.dumps({"metadata": {"resourceVersion": "1"}, "data": {"z": "z"}})
    status = await refusal(MERGE, stale)
    assert (status["code"], status["reason"]) == (409, "Conflict")
    assert await answer(http, "GET", path, 200) == before

    status = await answer(http, "PATCH", f"{path}-absent", 404, data=b"{}", headers=MERGE)
    assert status["message"] == 'configmaps "refusals-absent" not found'


async def test_dry_run_patch_answers_without_storing(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    path = await _configmap(http, namespace, "dry")
    before = await answer(http, "GET", path, 200)
    would = await answer(
        http,
        "PATCH",
        f"{path}?dryRun=All",
        200,
        data=orjson.dumps({"data": {"a": "changed"}}),
        headers=MERGE,
    )
    assert would["data"] == {"a": "changed"}
    assert await answer(http, "GET", path, 200) == before


async def test_concurrent_patches_all_land(http: aiohttp.ClientSession, namespace: str) -> None:
    path = await _configmap(http, namespace, "concurrent")
    await asyncio.gather(
        *(patch(http, path, MERGE, {"metadata": {"labels": {f"l{i}": str(i)}}}) for i in range(8))
    )
    stored = await answer(http, "GET", path, 200)
    assert stored["metadata"]["labels"] == {f"l{i}": str(i) for i in range(8)}


async def test_patching_scale_and_status_subresources(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    collection = f"/apis/apps/v1/namespaces/{namespace}/deployments"
    body = {
        "metadata": {"name": "patched"},
        "spec": {
            "selector": {"matchLabels": {"app": "p"}},
            "template": {
                "metadata": {"labels": {"app": "p"}},
                "spec": {"containers": [{"name": "a", "image": "x"}]},
            },
        },
    }
    await answer(http, "POST", collection, 201, json=body)
    path = f"{collection}/patched"
    scale = await patch(http, f"{path}/scale", MERGE, {"spec": {"replicas": 6}})
    assert scale["kind"] == "Scale" and scale["spec"] == {"replicas": 6}
    status = await patch(http, f"{path}/status", MERGE, {"status": {"replicas": 6}, "spec": None})
    assert status["status"] == {"replicas": 6}
    assert status["spec"]["replicas"] == 6  # the spec is the status write's to keep
    stored = await answer(http, "GET", path, 200)
    assert stored["metadata"]["generation"] == 2
    assert stored["status"] == {"replicas": 6}


async def test_apply_patches_need_a_field_manager_and_only_they_take_force(
    http: aiohttp.ClientSession,
) -> None:
    path = "/api/v1/namespaces/default/configmaps/applied-here"
    body = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied-here\ndata:\n  k: v\n"
    apply_yaml = {"Content-Type": "application/apply-patch+yaml"}
    async with http.patch(path, data=body, headers=apply_yaml) as response:
        refused = orjson.loads(await response.read())
        assert response.status == 422
    assert refused["message"] == (
        'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: '
        "is required for apply patch"
    )
    async with http.patch(f"{path}?fieldManager=tester", data=body, headers=apply_yaml) as response:
        created = orjson.loads(await response.read())
        assert response.status == 201, created
    assert created["data"] == {"k": "v"}
    assert [e["manager"] for e in created["metadata"]["managedFields"]] == ["tester"]
    merge = {"Content-Type": "application/merge-patch+json"}
    async with http.patch(f"{path}?force=true", data=b"{}", headers=merge) as response:
        refused = orjson.loads(await response.read())
        assert response.status == 422
    assert refused["message"] == (
        'PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: may not be specified for '
        "non-apply patch"
    )
    async with http.delete(path) as response:
        assert response.status == 200
