"""Built-in objects as kube's Go types make them, on create, update and every
kind of patch (services/registry/generic/typed.py): empty maps and lists left out,
empty structs kept, a null map value or list item its zero value; a custom
resource keeps its own empty maps and lists, its metadata alone taken as Go's
ObjectMeta. Each step is compared with what kube-apiserver v1.36 answered to
the same requests (tests/support/round_trip_cases.py says how they were
recorded)."""

from __future__ import annotations

import aiohttp
import pytest

from tests.support.round_trip_cases import CASES, recorded, run

KUBE = recorded()


def test_every_case_has_kubes_answer() -> None:
    assert set(KUBE) == set(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
async def test_writes_match_kube(http: aiohttp.ClientSession, name: str) -> None:
    answers = await run(http, CASES[name])
    for step, (got, expected) in enumerate(zip(answers, KUBE[name], strict=True)):
        assert (step, got) == (step, expected)


async def test_a_created_configmap_has_no_empty_maps_or_lists(
    http: aiohttp.ClientSession,
) -> None:
    """kube's whole answer: none of them, and no managedFields either (the
    writer owns no field)."""
    body = {
        "metadata": {"name": "rt-cm-whole", "labels": {}, "annotations": {}, "finalizers": []},
        "data": {},
        "binaryData": {},
    }
    path = "/api/v1/namespaces/default/configmaps"
    async with http.post(path, json=body) as response:
        created = await response.json()
    async with http.delete(f"{path}/rt-cm-whole"):
        pass
    assert response.status == 201
    assert set(created) == {"kind", "apiVersion", "metadata"}
    assert set(created["metadata"]) == {
        "name", "namespace", "uid", "resourceVersion", "creationTimestamp",
    }  # fmt: skip
