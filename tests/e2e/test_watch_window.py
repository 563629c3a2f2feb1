"""Watches from a resourceVersion outside the watch cache's window, through the
gateway, as kube-apiserver v1.36 answers them (asked with
`with_kube.sh`, a store restarted so that its caches listed at a late revision):

- older than the window: 200, then one ERROR event whose object is the Status
  {"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
  "message":"too old resource version: 1 (235)","reason":"Expired","code":410},
  then the end of the stream; the same for every namespace, a field selector or
  bookmarks; from the N it names the watch is served, from N-1 it is 410 again;
- the official client's `watch.Watch().stream(..., resource_version="1")` raises
  ApiException(status=410, reason="Expired: too old resource version: 1 (235)"),
  with timeout_seconds or without (it retries a 410 once, then raises);
- not reached yet: 200 at once, then the events after it when they come (a
  far-off one with timeoutSeconds=4 ends after 4s with none);
- a watch-list (sendInitialEvents) from a revision not reached: after 3s, an
  ERROR event with 504 Timeout and retryAfterSeconds 1;
- the window's size (podtemplates, which nothing else writes: 200 created in
  2s, then one more 80s later, default --request-timeout): 200 after the
  burst, then shrunk to 100, so the 100th created's revision is "too old
  resource version: 308 (309)" and the 101st's replays the last 100 events.
"""

from __future__ import annotations

import asyncio
import re
import time
import uuid
from collections.abc import Iterator
from typing import Any

import aiohttp
import kubernetes
import orjson
import pytest
from kubernetes.client.exceptions import ApiException

from strata.client import DynamicClient, Expired, Resource, RestClient, load_config
from strata.dev import System

# The official client is only partly annotated: its calls are made untyped.
official: Any = kubernetes
CONFIGMAPS = Resource(version="v1", resource="configmaps", kind="ConfigMap")
TOO_OLD = re.compile(r"too old resource version: (\d+) \((\d+)\)")


def kube_expired(message: str) -> dict[str, Any]:
    """kube's ERROR event object for a watch older than the window."""
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": "Expired",
        "code": 410,
    }


async def namespace(http: aiohttp.ClientSession) -> str:
    name = f"window-{uuid.uuid4().hex[:6]}"
    async with http.post("/api/v1/namespaces", json={"metadata": {"name": name}}) as response:
        assert response.status == 201, await response.text()
    return name


async def create(http: aiohttp.ClientSession, ns: str, name: str) -> int:
    path = f"/api/v1/namespaces/{ns}/configmaps"
    async with http.post(path, json={"metadata": {"name": name}}) as response:
        assert response.status == 201, await response.text()
        return int((await response.json())["metadata"]["resourceVersion"])


async def lines(
    http: aiohttp.ClientSession, path: str, within: float = 15
) -> tuple[int, list[dict[str, Any]]]:
    """The status and every event line of a watch that the server ends."""
    async with asyncio.timeout(within), http.get(path) as response:
        if response.status != 200:
            return response.status, [await response.json()]
        assert response.content_type == "application/json"
        return 200, [orjson.loads(line) async for line in response.content if line.strip()]


def status_of(event: dict[str, Any]) -> dict[str, Any]:
    """An ERROR event's Status, with an empty details dropped: kube omits it
    (strata's Status bytes are their own slice of work; the fields are kube's)."""
    assert event["type"] == "ERROR", event
    status = dict(event["object"])
    assert status.pop("details", {}) == {}
    return status


async def expired(http: aiohttp.ClientSession, path: str) -> int:
    """The watch's one event is kube's 410 ERROR; the N it names as the oldest."""
    code, events = await lines(http, path)
    assert code == 200 and len(events) == 1, events
    message = status_of(events[0])["message"]
    named = TOO_OLD.fullmatch(message)
    assert named is not None, message
    assert status_of(events[0]) == kube_expired(message)
    return int(named[2])


async def test_a_watch_older_than_the_window_is_kubes_expired_event(
    http: aiohttp.ClientSession,
) -> None:
    ns = await namespace(http)
    created = await create(http, ns, "a")
    path = f"/api/v1/namespaces/{ns}/configmaps"
    oldest = await expired(http, f"{path}?watch=1&resourceVersion=1")
    assert 1 < oldest <= created
    # Every way of asking says the same: all namespaces, one name, bookmarks.
    for other in (
        "/api/v1/configmaps?watch=1&resourceVersion=1",
        f"{path}?watch=1&resourceVersion=1&fieldSelector=metadata.name%3Da",
        f"{path}?watch=1&resourceVersion=1&allowWatchBookmarks=true",
    ):
        assert await expired(http, other) == oldest
    assert await expired(http, f"{path}?watch=1&resourceVersion={oldest - 1}") == oldest
    # From the oldest revision it names, the watch replays what came after.
    code, events = await lines(http, f"{path}?watch=1&resourceVersion={oldest}&timeoutSeconds=2")
    assert code == 200
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "a")]


async def test_a_watch_list_from_an_old_revision_sends_the_state(
    http: aiohttp.ClientSession,
) -> None:
    # kube: sendInitialEvents=true with NotOlderThan=1 is not "too old".
    ns = await namespace(http)
    created = await create(http, ns, "a")
    query = "sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"
    path = f"/api/v1/namespaces/{ns}/configmaps?watch=1&resourceVersion=1&{query}&timeoutSeconds=2"
    code, events = await lines(http, path)
    assert code == 200
    assert events[0]["type"] == "ADDED" and events[0]["object"]["metadata"]["name"] == "a"
    assert events[1]["type"] == "BOOKMARK"
    assert int(events[1]["object"]["metadata"]["resourceVersion"]) >= created


async def test_a_watch_from_a_revision_not_reached_yet_waits_for_it(
    http: aiohttp.ClientSession,
) -> None:
    ns = await namespace(http)
    path = f"/api/v1/namespaces/{ns}/configmaps"
    async with http.get(path) as response:
        future = int((await response.json())["metadata"]["resourceVersion"]) + 3
    started = time.monotonic()
    async with http.get(f"{path}?watch=1&resourceVersion={future}&timeoutSeconds=6") as response:
        assert response.status == 200 and time.monotonic() - started < 2  # answered at once
        written = {name: await create(http, ns, name) for name in ("a", "b", "c", "d", "e")}
        events = [orjson.loads(line) async for line in response.content if line.strip()]
    assert max(written.values()) > future
    assert [e["object"]["metadata"]["name"] for e in events] == [
        name for name, rv in written.items() if rv > future
    ]
    # One that is never reached ends at its timeout, with nothing.
    started = time.monotonic()
    code, events = await lines(
        http, f"{path}?watch=1&resourceVersion={future + 10**6}&timeoutSeconds=2"
    )
    assert (code, events) == (200, [])
    assert 1.9 < time.monotonic() - started < 5


async def test_a_watch_list_from_a_revision_not_reached_yet_times_out(
    http: aiohttp.ClientSession,
) -> None:
    ns = await namespace(http)
    path = f"/api/v1/namespaces/{ns}/configmaps"
    async with http.get(path) as response:
        future = int((await response.json())["metadata"]["resourceVersion"]) + 10**6
    query = "sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"
    started = time.monotonic()
    code, events = await lines(http, f"{path}?watch=1&resourceVersion={future}&{query}")
    assert 2.5 < time.monotonic() - started < 10  # kube: 3s
    assert code == 200 and len(events) == 1 and events[0]["type"] == "ERROR"
    status = events[0]["object"]
    assert (status["code"], status["reason"]) == (504, "Timeout")
    assert status["details"]["retryAfterSeconds"] == 1
    assert f"Too large resource version: {future}, current: " in status["message"]


async def established_crd(http: aiohttp.ClientSession) -> str:
    """The path of a new custom resource's objects in a new namespace: a resource
    of its own, whose cache and window nothing else touches."""
    group = f"w{uuid.uuid4().hex[:8]}.example.com"
    crd = {
        "metadata": {"name": f"gadgets.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": "gadgets", "kind": "Gadget"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": {"type": "object"}},
                }
            ],
        },
    }
    crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    async with http.post(crds, json=crd) as response:
        assert response.status == 201, await response.text()
    ns = await namespace(http)
    path = f"/apis/{group}/v1/namespaces/{ns}/gadgets"
    async with asyncio.timeout(15):
        while True:
            async with http.get(path) as response:
                if response.status == 200:
                    return path
            await asyncio.sleep(0.1)


@pytest.mark.timeout(300)
async def test_an_idle_full_window_halves_after_75_seconds_as_kubes(
    http: aiohttp.ClientSession,
) -> None:
    path = await established_crd(http)
    body = {"apiVersion": path.split("/")[2] + "/v1", "kind": "Gadget"}
    revisions = []
    for i in range(200):
        async with http.post(path, json={**body, "metadata": {"name": f"g{i}"}}) as response:
            assert response.status == 201, await response.text()
            revisions.append(int((await response.json())["metadata"]["resourceVersion"]))
    # A window of 200 (it grew at the 101st): everything since the first replays.
    code, events = await lines(
        http, f"{path}?watch=1&resourceVersion={revisions[0]}&timeoutSeconds=1"
    )
    assert code == 200 and len(events) == 199
    await asyncio.sleep(80)  # longer than the fresh duration, 75s
    async with http.post(path, json={**body, "metadata": {"name": "last"}}) as response:
        assert response.status == 201, await response.text()
        revisions.append(int((await response.json())["metadata"]["resourceVersion"]))
    # The newest quarter was stale: halved to the newest 100, then one left.
    assert await expired(http, f"{path}?watch=1&resourceVersion={revisions[99]}") == (
        revisions[101] - 1
    )
    code, events = await lines(
        http, f"{path}?watch=1&resourceVersion={revisions[100]}&timeoutSeconds=1"
    )
    assert code == 200
    assert [int(e["object"]["metadata"]["resourceVersion"]) for e in events] == revisions[101:]


async def test_strata_client_watch_raises_expired(system: System) -> None:
    async with RestClient(load_config(system.kubeconfig)) as rest:
        configmaps = DynamicClient(rest).resource(CONFIGMAPS)
        with pytest.raises(Expired) as caught:
            async for _ in configmaps.watch("default", resource_version="1"):
                pass
    assert caught.value.code == 410 and caught.value.reason == "Expired"
    assert TOO_OLD.fullmatch(caught.value.message)


@pytest.fixture(scope="module")
def core(system: System) -> Iterator[Any]:
    api_client = official.config.new_client_from_config(config_file=str(system.kubeconfig))
    yield official.client.CoreV1Api(api_client)
    api_client.close()


def test_the_official_watch_helper_raises_kubes_410(core: Any) -> None:
    for options in ({"timeout_seconds": 5}, {}):
        started = time.monotonic()
        with pytest.raises(ApiException) as caught:
            for _ in official.watch.Watch().stream(
                core.list_namespaced_config_map, "default", resource_version="1", **options
            ):
                pass
        assert caught.value.status == 410
        assert re.fullmatch(r"Expired: too old resource version: 1 \(\d+\)", caught.value.reason)
        assert time.monotonic() - started < 5
