"""DeleteCollection: every object a list with the same options returns is
deleted as a single delete would be, and the answer lists them."""

from __future__ import annotations

import aiohttp
import pytest

from strata.etcd import Etcd
from tests.support.registry_tester import answer, new_namespace, refused, revision, writes_since


@pytest.fixture
async def collection(http: aiohttp.ClientSession) -> str:
    path = f"/api/v1/namespaces/{await new_namespace(http, 'dc')}/configmaps"
    for name, app in (("a", "x"), ("b", "x"), ("c", "y")):
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "labels": {"app": app}},
        }
        await answer(http, "POST", path, 201, json=body)
    return path


async def names(http: aiohttp.ClientSession, path: str) -> list[str]:
    listed = await answer(http, "GET", path, 200)
    return [item["metadata"]["name"] for item in listed["items"]]


async def test_deletes_what_the_selector_selects(
    http: aiohttp.ClientSession, collection: str
) -> None:
    deleted = await answer(http, "DELETE", collection, 200, params={"labelSelector": "app=x"})
    assert (deleted["kind"], deleted["apiVersion"]) == ("ConfigMapList", "v1")
    assert sorted(i["metadata"]["name"] for i in deleted["items"]) == ["a", "b"]
    assert await names(http, collection) == ["c"]


async def test_a_dry_run_deletes_nothing(
    http: aiohttp.ClientSession, system_etcd: Etcd, collection: str
) -> None:
    before = await revision(system_etcd)
    deleted = await answer(http, "DELETE", collection, 200, params={"dryRun": "All"})
    assert len(deleted["items"]) == 3
    assert await writes_since(system_etcd, before) == []
    assert await names(http, collection) == ["a", "b", "c"]


async def test_objects_with_finalizers_are_marked(
    http: aiohttp.ClientSession, collection: str
) -> None:
    held = await answer(http, "GET", f"{collection}/a", 200)
    held["metadata"]["finalizers"] = ["example.com/hold"]
    await answer(http, "PUT", f"{collection}/a", 200, json=held)
    deleted = await answer(http, "DELETE", collection, 200)
    marked = {
        i["metadata"]["name"]: i["metadata"].get("deletionTimestamp") for i in deleted["items"]
    }
    assert marked.keys() == {"a", "b", "c"} and marked["a"] and not marked["b"]
    assert await names(http, collection) == ["a"]


async def test_namespaces_and_cluster_wide_paths_refuse_it(
    http: aiohttp.ClientSession, system_etcd: Etcd
) -> None:
    for path in ("/api/v1/namespaces", "/api/v1/configmaps"):
        body = await refused(http, system_etcd, "DELETE", path)
        assert (body["code"], body["reason"]) == (405, "MethodNotAllowed")
