"""Deletion with finalizers, as kube does it: an object with finalizers is
marked with a deletionTimestamp and stays readable; it goes when its last
finalizer is removed; no finalizer may be added meanwhile, and the mark
cannot be taken back."""

from __future__ import annotations

import aiohttp
import pytest

from strata.etcd import Etcd
from tests.support.registry_tester import answer, new_namespace, refused


@pytest.fixture(scope="module")
async def collection(http: aiohttp.ClientSession) -> str:
    return f"/api/v1/namespaces/{await new_namespace(http, 'fin')}/configmaps"


async def test_an_object_with_finalizers_is_marked_then_goes_with_its_last_finalizer(
    http: aiohttp.ClientSession, system_etcd: Etcd, collection: str
) -> None:
    item = f"{collection}/held"
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "held", "finalizers": ["example.com/a", "example.com/b"]},
    }
    await answer(http, "POST", collection, 201, json=body)

    marked = await answer(http, "DELETE", item, 200)
    assert marked["kind"] == "ConfigMap"  # the object, not a Status: it is not gone
    when = marked["metadata"]["deletionTimestamp"]
    assert when and marked["metadata"]["deletionGracePeriodSeconds"] == 0
    again = await answer(http, "DELETE", item, 200)
    assert again["metadata"]["deletionTimestamp"] == when
    assert again["metadata"]["resourceVersion"] == marked["metadata"]["resourceVersion"]

    current = await answer(http, "GET", item, 200)
    added = dict(
        current, metadata={**current["metadata"], "finalizers": ["example.com/a", "example.com/c"]}
    )
    refusal = await refused(http, system_etcd, "PUT", item, json=added)
    assert (refusal["code"], refusal["reason"]) == (422, "Invalid")
    assert [c["message"] for c in refusal["details"]["causes"]] == [
        "Forbidden: no new finalizers can be added if the object is being deleted, found new "
        'finalizers []string{"example.com/c"}'
    ]

    # A client that leaves the mark out does not take it back.
    unmarked = {**current["metadata"], "finalizers": ["example.com/b"]}
    unmarked.pop("deletionTimestamp")
    kept = await answer(http, "PUT", item, 200, json=dict(current, metadata=unmarked))
    assert kept["metadata"]["deletionTimestamp"] == when

    last = {**kept["metadata"], "finalizers": []}
    await answer(http, "PUT", item, 200, json=dict(kept, metadata=last))
    async with http.get(item) as response:
        assert response.status == 404


async def test_an_object_without_finalizers_goes_at_once(
    http: aiohttp.ClientSession, collection: str
) -> None:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "free"}}
    await answer(http, "POST", collection, 201, json=body)
    status = await answer(http, "DELETE", f"{collection}/free", 200)
    assert (status["kind"], status["status"]) == ("Status", "Success")
    async with http.get(f"{collection}/free") as response:
        assert response.status == 404
