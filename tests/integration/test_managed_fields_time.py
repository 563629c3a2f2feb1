"""When an ordinary write (operation Update) moves its manager's managedFields
time: only when it set or changed a field, as kube's managedFieldsUpdater
does. A write of the same object changes nothing at all (no new
resourceVersion), and a write that only removes fields leaves its manager's
time where it was. Recorded from kube-apiserver v1.36.2
(`../shared/kube/with_kube.sh`, raw HTTPS requests as the admin user, a
second between steps): each step's status, whether its resourceVersion moved,
and each entry's manager, time (named by when it first appeared) and fields."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import orjson

from tests.support.registry_tester import new_namespace

MERGE = "application/merge-patch+json"
DATA_A: dict[str, Any] = {"f:data": {".": {}, "f:a": {}}}
# (status, resourceVersion moved, [(manager, time label, fieldsV1)]) per step.
KUBE = [
    (201, True, [("m1", 0, DATA_A)]),
    (200, False, [("m1", 0, DATA_A)]),
    (200, True, [("m1", 1, DATA_A)]),
    (200, True, [("m1", 1, DATA_A), ("m2", 2, {"f:data": {"f:b": {}}})]),
    (200, True, [("m1", 1, DATA_A)]),
    (200, False, [("m1", 1, DATA_A)]),
    (200, False, [("m1", 1, DATA_A)]),
]


def _without_self(fields: Any) -> Any:
    """FieldsV1 without its "." members (strata does not yet own the maps an
    Update adds: test_kube_key_order's xfail names it)."""
    if not isinstance(fields, dict):
        return fields
    return {k: _without_self(v) for k, v in fields.items() if k != "."}


async def test_an_update_moves_its_managers_time_only_when_it_sets_a_field(
    http: aiohttp.ClientSession,
) -> None:
    collection = f"/api/v1/namespaces/{await new_namespace(http, 'mftime')}/configmaps"
    seen: list[tuple[int, str, list[tuple[str, str, Any]]]] = []

    async def step(method: str, path: str, body: Any, manager: str, content_type: str) -> Any:
        async with http.request(
            method,
            path,
            data=orjson.dumps(body),
            headers={"Content-Type": content_type},
            params={"fieldManager": manager},
        ) as response:
            obj = orjson.loads(await response.read())
            meta = obj["metadata"]
            managed = [
                (e["manager"], e["time"], e["fieldsV1"]) for e in meta.get("managedFields", [])
            ]
            seen.append((response.status, meta["resourceVersion"], managed))
        await asyncio.sleep(1.1)  # the next step's times fall in another second
        return obj

    json = "application/json"
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "mt"}, "data": {"a": "1"}}
    obj = await step("POST", collection, body, "m1", json)
    path = f"{collection}/mt"
    obj = await step("PUT", path, obj, "m1", json)
    obj["data"]["a"] = "2"
    obj = await step("PUT", path, obj, "m1", json)
    obj["data"]["b"] = "x"
    obj = await step("PUT", path, obj, "m2", json)
    del obj["data"]["b"]
    obj = await step("PUT", path, obj, "m1", json)
    obj = await step("PATCH", path, {"data": {"a": "2"}}, "m2", MERGE)
    await step("PUT", path, obj, "m2", json)

    times: list[str] = []
    got = []
    previous = ""
    for status, version, managed in seen:
        entries = []
        for manager, at, fields in managed:
            if at not in times:
                times.append(at)
            entries.append((manager, times.index(at), _without_self(fields)))
        got.append((status, version != previous, entries))
        previous = version
    assert got == [
        (status, moved, [(m, t, _without_self(f)) for m, t, f in entries])
        for status, moved, entries in KUBE
    ]
