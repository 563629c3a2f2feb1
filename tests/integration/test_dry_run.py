"""dryRun=All on every write: the whole write runs (validation, conflicts,
existence, preconditions), nothing is stored (etcd sees no write),
and the answer is what would have been stored."""

from __future__ import annotations

import aiohttp
import pytest

from strata.etcd import Etcd
from tests.support.registry_tester import (
    answer,
    configmap,
    new_namespace,
    refused,
    revision,
    writes_since,
)

DRY_RUN = {"dryRun": "All"}


@pytest.fixture(scope="module")
async def collection(http: aiohttp.ClientSession) -> str:
    return f"/api/v1/namespaces/{await new_namespace(http, 'dry')}/configmaps"


async def status_of(http: aiohttp.ClientSession, path: str) -> int:
    async with http.get(path) as response:
        return response.status


async def test_a_dry_run_create_answers_and_stores_nothing(
    http: aiohttp.ClientSession, system_etcd: Etcd, collection: str
) -> None:
    before = await revision(system_etcd)
    body = configmap("", data={"k": "v"})
    body["metadata"] = {"generateName": "gen-"}
    created = await answer(http, "POST", collection, 201, json=body, params=DRY_RUN)
    assert await writes_since(system_etcd, before) == []
    meta = created["metadata"]
    assert meta["name"].startswith("gen-") and meta["uid"] and meta["creationTimestamp"]
    assert "resourceVersion" not in meta
    assert created["data"] == {"k": "v"}
    assert await status_of(http, f"{collection}/{meta['name']}") == 404


async def test_a_dry_run_create_is_refused_as_a_real_one(
    http: aiohttp.ClientSession, system_etcd: Etcd, collection: str
) -> None:
    invalid = await refused(
        http, system_etcd, "POST", collection, json=configmap("Bad"), params=DRY_RUN
    )
    assert (invalid["code"], invalid["reason"]) == (422, "Invalid")
    await answer(http, "POST", collection, 201, json=configmap("taken"))
    taken = await refused(
        http, system_etcd, "POST", collection, json=configmap("taken"), params=DRY_RUN
    )
    assert (taken["code"], taken["reason"]) == (409, "AlreadyExists")
    assert taken["message"] == 'configmaps "taken" already exists'


async def test_a_dry_run_update_answers_the_change_and_keeps_the_object(
    http: aiohttp.ClientSession, system_etcd: Etcd, collection: str
) -> None:
    created = await answer(
        http, "POST", collection, 201, json=configmap("updated", data={"k": "1"})
    )
    changed = {**created, "data": {"k": "2"}}
    before = await revision(system_etcd)
    answered = await answer(http, "PUT", f"{collection}/updated", 200, json=changed, params=DRY_RUN)
    assert await writes_since(system_etcd, before) == []
    assert answered["data"] == {"k": "2"}
    assert answered["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    stored = await answer(http, "GET", f"{collection}/updated", 200)
    assert stored == created
    stale = dict(changed, metadata={**created["metadata"], "resourceVersion": "1"})
    conflict = await refused(
        http, system_etcd, "PUT", f"{collection}/updated", json=stale, params=DRY_RUN
    )
    assert (conflict["code"], conflict["reason"]) == (409, "Conflict")


async def test_a_dry_run_delete_checks_preconditions_and_keeps_the_object(
    http: aiohttp.ClientSession, system_etcd: Etcd, collection: str
) -> None:
    created = await answer(http, "POST", collection, 201, json=configmap("kept"))
    before = await revision(system_etcd)
    success = await answer(http, "DELETE", f"{collection}/kept", 200, params=DRY_RUN)
    assert (success["kind"], success["status"]) == ("Status", "Success")
    body = {"dryRun": ["All"], "preconditions": {"uid": created["metadata"]["uid"]}}
    await answer(http, "DELETE", f"{collection}/kept", 200, json=body)  # dryRun in the body
    assert await writes_since(system_etcd, before) == []
    assert await status_of(http, f"{collection}/kept") == 200
    wrong = {"dryRun": ["All"], "preconditions": {"uid": "not-its-uid"}}
    failed = await refused(http, system_etcd, "DELETE", f"{collection}/kept", json=wrong)
    assert (failed["code"], failed["reason"]) == (409, "Conflict")


async def test_a_dry_run_namespace_delete_answers_the_namespace_as_it_would_be(
    http: aiohttp.ClientSession, system_etcd: Etcd
) -> None:
    name = await new_namespace(http, "dry")
    before = await revision(system_etcd)
    answered = await answer(http, "DELETE", f"/api/v1/namespaces/{name}", 200, params=DRY_RUN)
    assert (answered["kind"], answered["metadata"]["name"]) == ("Namespace", name)
    assert answered["status"]["phase"] == "Terminating"
    assert await writes_since(system_etcd, before) == []
    stored = await answer(http, "GET", f"/api/v1/namespaces/{name}", 200)
    assert stored["status"]["phase"] == "Active"


@pytest.mark.parametrize(
    ("method", "kind"),
    [("POST", "CreateOptions"), ("PUT", "UpdateOptions"), ("DELETE", "DeleteOptions")],
)
async def test_dry_run_takes_only_all(
    http: aiohttp.ClientSession, system_etcd: Etcd, collection: str, method: str, kind: str
) -> None:
    path = collection if method == "POST" else f"{collection}/any"
    body = await refused(
        http,
        system_etcd,
        method,
        path,
        json=configmap("any"),
        params=[("dryRun", "All"), ("dryRun", "Some")],
    )
    assert (body["code"], body["reason"]) == (422, "Invalid")
    assert body["message"] == (
        f'{kind}.meta.k8s.io "" is invalid: dryRun: Unsupported value: '
        '["All","Some"]: supported values: "All"'
    )
