"""The REST surface the skeleton serves, over HTTPS against the running system:
discovery, health, tables, selectors, generateName and raw watch streams."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import aiohttp
import orjson
import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from strata.dev import System
from tests.support.sessions import admin_session

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"


async def get_json(http: aiohttp.ClientSession, path: str, **kwargs: Any) -> Any:
    async with http.get(path, **kwargs) as response:
        assert response.status == 200, await response.text()
        return orjson.loads(await response.read())


async def get_status(http: aiohttp.ClientSession, path: str, code: int, **kwargs: Any) -> Any:
    async with http.get(path, **kwargs) as response:
        assert response.status == code, await response.text()
        return orjson.loads(await response.read())


async def create(http: aiohttp.ClientSession, path: str, body: dict[str, Any]) -> Any:
    async with http.post(path, json=body) as response:
        assert response.status == 201, await response.text()
        return orjson.loads(await response.read())


@pytest.fixture
async def namespace(http: aiohttp.ClientSession) -> str:
    name = f"ns-{uuid.uuid4().hex[:8]}"
    await create(
        http,
        "/api/v1/namespaces",
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}},
    )
    return name


async def test_discovery_documents(http: aiohttp.ClientSession) -> None:
    api = await get_json(http, "/api")
    assert api["kind"] == "APIVersions" and api["versions"] == ["v1"]
    groups = await get_json(http, "/apis")
    coordination = {"groupVersion": "coordination.k8s.io/v1", "version": "v1"}
    apps = {"groupVersion": "apps/v1", "version": "v1"}
    rbac = {"groupVersion": "rbac.authorization.k8s.io/v1", "version": "v1"}
    extensions = {"groupVersion": "apiextensions.k8s.io/v1", "version": "v1"}
    authentication = {"groupVersion": "authentication.k8s.io/v1", "version": "v1"}
    authorization = {"groupVersion": "authorization.k8s.io/v1", "version": "v1"}
    assert (groups["kind"], groups["apiVersion"]) == ("APIGroupList", "v1")
    # Other tests' custom resource groups come and go; the built-in ones stay.
    assert [g for g in groups["groups"] if "example" not in g["name"]] == [
        {"name": "apiextensions.k8s.io", "versions": [extensions], "preferredVersion": extensions},
        {"name": "apps", "versions": [apps], "preferredVersion": apps},
        {
            "name": "authentication.k8s.io",
            "versions": [authentication],
            "preferredVersion": authentication,
        },
        {
            "name": "authorization.k8s.io",
            "versions": [authorization],
            "preferredVersion": authorization,
        },
        {
            "name": "coordination.k8s.io",
            "versions": [coordination],
            "preferredVersion": coordination,
        },
        {"name": "rbac.authorization.k8s.io", "versions": [rbac], "preferredVersion": rbac},
    ]
    leases = await get_json(http, "/apis/coordination.k8s.io/v1")
    assert leases["groupVersion"] == "coordination.k8s.io/v1"
    assert [(r["name"], r["kind"], r["namespaced"]) for r in leases["resources"]] == [
        ("leases", "Lease", True)
    ]
    resources = await get_json(http, "/api/v1")
    assert resources["kind"] == "APIResourceList" and resources["groupVersion"] == "v1"
    by_name = {r["name"]: r for r in resources["resources"]}
    assert by_name["configmaps"]["namespaced"] is True
    assert by_name["configmaps"]["kind"] == "ConfigMap"
    assert by_name["configmaps"]["shortNames"] == ["cm"]
    assert by_name["namespaces"]["namespaced"] is False
    assert set(by_name["namespaces"]["verbs"]) >= {"create", "get", "list", "watch", "delete"}
    version = await get_json(http, "/version")
    assert (version["major"], version["minor"]) == ("1", "32")


@pytest.mark.parametrize("path", ["/healthz", "/livez", "/readyz"])
async def test_health(http: aiohttp.ClientSession, path: str) -> None:
    async with http.get(path) as response:
        assert response.status == 200 and await response.text() == "ok"


async def test_table_output(http: aiohttp.ClientSession, namespace: str) -> None:
    base = f"/api/v1/namespaces/{namespace}/configmaps"
    await create(
        http,
        base,
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "t"}, "data": {"a": "1"}},
    )
    table = await get_json(http, base, headers={"Accept": TABLE})
    assert table["kind"] == "Table" and table["apiVersion"] == "meta.k8s.io/v1"
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Data", "Age"]
    (row,) = table["rows"]
    assert row["cells"][:2] == ["t", 1]
    assert row["object"]["kind"] == "PartialObjectMetadata"
    assert row["object"]["metadata"]["name"] == "t"
    one = await get_json(
        http, f"{base}/t", headers={"Accept": TABLE}, params={"includeObject": "None"}
    )
    assert one["rows"][0]["cells"][0] == "t" and "object" not in one["rows"][0]
    async with http.get(base, headers={"Accept": TABLE}, params={"includeObject": "All"}) as bad:
        assert bad.status == 400


async def test_generate_name(http: aiohttp.ClientSession, namespace: str) -> None:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "gen-"}}
    first = await create(http, f"/api/v1/namespaces/{namespace}/configmaps", body)
    second = await create(http, f"/api/v1/namespaces/{namespace}/configmaps", body)
    names = {first["metadata"]["name"], second["metadata"]["name"]}
    assert len(names) == 2 and all(n.startswith("gen-") and len(n) == 9 for n in names)


async def test_lists_filter_by_selectors_and_span_namespaces(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    base = f"/api/v1/namespaces/{namespace}/configmaps"
    for name, tier in (("web", "front"), ("db", "back"), ("cache", "back")):
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "labels": {"tier": tier, "suite": namespace}},
        }
        await create(http, base, body)
    listed = await get_json(http, base, params={"labelSelector": "tier=back"})
    assert listed["kind"] == "ConfigMapList" and listed["apiVersion"] == "v1"
    assert [i["metadata"]["name"] for i in listed["items"]] == ["cache", "db"]
    assert int(listed["metadata"]["resourceVersion"]) > 0
    named = await get_json(http, base, params={"fieldSelector": "metadata.name=web"})
    assert [i["metadata"]["name"] for i in named["items"]] == ["web"]
    everywhere = await get_json(
        http, "/api/v1/configmaps", params={"labelSelector": f"suite={namespace}"}
    )
    assert {i["metadata"]["namespace"] for i in everywhere["items"]} == {namespace}
    assert len(everywhere["items"]) == 3


async def _read_events(response: aiohttp.ClientResponse, count: int) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    async with asyncio.timeout(10):
        while len(events) < count:
            line = await response.content.readline()
            assert line, "the watch ended early"
            events.append(orjson.loads(line))
    return events


async def test_watch_from_resource_version(http: aiohttp.ClientSession, namespace: str) -> None:
    base = f"/api/v1/namespaces/{namespace}/configmaps"
    listed = await get_json(http, base)
    rv = listed["metadata"]["resourceVersion"]
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "w"}}
    async with http.get(base, params={"watch": "1", "resourceVersion": rv}) as response:
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("application/json")
        created = await create(http, base, body)
        async with http.delete(f"{base}/w") as deleted:
            status = orjson.loads(await deleted.read())
            assert deleted.status == 200
            assert status["status"] == "Success" and status["details"]["name"] == "w"
        events = await _read_events(response, 2)
    assert [e["type"] for e in events] == ["ADDED", "DELETED"]
    assert events[0]["object"]["metadata"]["uid"] == created["metadata"]["uid"]
    assert int(events[1]["object"]["metadata"]["resourceVersion"]) > int(
        created["metadata"]["resourceVersion"]
    )


async def test_a_metadata_watch_sends_partial_object_metadata(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    """client-go's metadata informers watch with as=PartialObjectMetadata: each
    event's object is then the object's metadata, nothing else."""
    base = f"/api/v1/namespaces/{namespace}/configmaps"
    rv = (await get_json(http, base))["metadata"]["resourceVersion"]
    accept = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
    params = {"watch": "1", "resourceVersion": rv}
    async with (
        http.get(base, params=params, headers={"Accept": accept}) as metadata_only,
        http.get(base, params=params) as whole,
    ):
        assert metadata_only.status == whole.status == 200
        body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "meta"}}
        created = await create(http, base, {**body, "data": {"secret-ish": "x"}})
        (partial,) = await _read_events(metadata_only, 1)
        (full,) = await _read_events(whole, 1)
    assert partial["type"] == "ADDED"
    assert set(partial["object"]) == {"kind", "apiVersion", "metadata"}
    assert (partial["object"]["kind"], partial["object"]["apiVersion"]) == (
        "PartialObjectMetadata",
        "meta.k8s.io/v1",
    )
    assert partial["object"]["metadata"]["uid"] == created["metadata"]["uid"]
    # The other watcher of the same events still gets whole objects.
    assert full["object"]["data"] == {"secret-ish": "x"}


async def test_watch_ends_after_timeout_seconds(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    base = f"/api/v1/namespaces/{namespace}/configmaps"
    async with asyncio.timeout(10):
        async with http.get(base, params={"watch": "true", "timeoutSeconds": "1"}) as response:
            assert response.status == 200
            assert await response.read() == b""


async def test_watch_from_compacted_revision_is_410_event(
    http: aiohttp.ClientSession, system: System, namespace: str
) -> None:
    etcd = system.etcd_client()
    base = f"/api/v1/namespaces/{namespace}/configmaps"
    await create(http, base, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "old"}})
    current = (await etcd.range(b"/", count_only=True)).header.revision
    await etcd.compact(current)
    await etcd.close()
    # Older than anything the watch cache held: answered from etcd, which compacted it.
    stale = 1
    async with http.get(base, params={"watch": "1", "resourceVersion": str(stale)}) as response:
        assert response.status == 200
        (event,) = await _read_events(response, 1)
    assert event["type"] == "ERROR"
    assert event["object"]["code"] == 410 and event["object"]["reason"] == "Expired"


async def test_list_pages_with_limit_and_continue(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    base = f"/api/v1/namespaces/{namespace}/configmaps"
    for i in range(5):
        await create(
            http, base, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"p{i}"}}
        )
    first = await get_json(http, base, params={"limit": "2"})
    assert [i["metadata"]["name"] for i in first["items"]] == ["p0", "p1"]
    assert first["metadata"]["remainingItemCount"] == 3 and first["metadata"]["continue"]
    names = [i["metadata"]["name"] for i in first["items"]]
    token = first["metadata"]["continue"]
    while token:
        page = await get_json(http, base, params={"limit": "2", "continue": token})
        assert page["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
        names += [i["metadata"]["name"] for i in page["items"]]
        token = page["metadata"].get("continue")
    assert names == [f"p{i}" for i in range(5)]
    table = await get_json(http, base, params={"limit": "2"}, headers={"Accept": TABLE})
    assert table["metadata"]["continue"] and len(table["rows"]) == 2


async def test_watch_bookmarks_when_asked(http: aiohttp.ClientSession, namespace: str) -> None:
    base = f"/api/v1/namespaces/{namespace}/configmaps"
    listed = await get_json(http, base)
    # Bookmarks come every minute, and 2s before the watch times out: here after 4s.
    params = {
        "watch": "1",
        "resourceVersion": listed["metadata"]["resourceVersion"],
        "allowWatchBookmarks": "true",
        "timeoutSeconds": "6",
    }
    async with http.get(base, params=params) as response:
        async with asyncio.timeout(30):
            event = orjson.loads(await response.content.readline())
    assert event["type"] == "BOOKMARK", event
    assert event["object"]["kind"] == "ConfigMap"
    assert int(event["object"]["metadata"]["resourceVersion"]) >= int(
        listed["metadata"]["resourceVersion"]
    )


async def test_watch_list_ends_its_initial_events_with_an_annotated_bookmark(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    base = f"/api/v1/namespaces/{namespace}/configmaps"
    for name in ("a", "b"):
        await create(
            http, base, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}
        )
    params = {
        "watch": "1",
        "sendInitialEvents": "true",
        "allowWatchBookmarks": "true",
        "resourceVersionMatch": "NotOlderThan",
    }
    seen = []
    async with http.get(base, params=params) as response:
        assert response.status == 200, await response.text()
        async with asyncio.timeout(30):
            while True:
                event = orjson.loads(await response.content.readline())
                seen.append(event)
                if event["type"] == "BOOKMARK":
                    break
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in seen[:-1]] == [
        ("ADDED", "a"),
        ("ADDED", "b"),
    ]
    end = seen[-1]["object"]["metadata"]
    assert end["annotations"] == {"k8s.io/initial-events-end": "true"}
    assert int(end["resourceVersion"]) >= max(
        int(e["object"]["metadata"]["resourceVersion"]) for e in seen[:-1]
    )


async def test_a_watch_that_declines_initial_events_starts_from_now(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    base = f"/api/v1/namespaces/{namespace}/configmaps"
    await create(http, base, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}})
    params = {
        "watch": "1",
        "sendInitialEvents": "false",
        "resourceVersionMatch": "NotOlderThan",
        "resourceVersion": "",
    }
    async with http.get(base, params=params) as response:
        assert response.status == 200, await response.text()
        line = asyncio.ensure_future(response.content.readline())
        # "From now" starts somewhere after the request: writes go on until the
        # watch sees one, and a's state would have come before any of them.
        written: list[str] = []
        async with asyncio.timeout(30):
            while not line.done():
                written.append(f"b{len(written)}")
                body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": written[-1]}}
                await create(http, base, body)
                await asyncio.wait([line], timeout=0.1)
        event = orjson.loads(line.result())
    assert event["type"] == "ADDED"
    assert event["object"]["metadata"]["name"] in written


async def test_metrics_and_audit_ids(http: aiohttp.ClientSession, namespace: str) -> None:
    async with http.get(f"/api/v1/namespaces/{namespace}/configmaps") as response:
        assert response.status == 200
        listed_audit_id = response.headers["Audit-ID"]
    async with http.get(f"/api/v1/namespaces/{namespace}/configmaps/missing") as response:
        assert response.status == 404
        assert response.headers["Audit-ID"] != listed_audit_id
    async with http.get("/metrics") as response:
        assert response.status == 200
        assert response.content_type == "text/plain"
        text = await response.text()
    lines = [line for line in text.splitlines() if line.startswith("apiserver_request_total{")]
    assert any(
        'code="404"' in line and 'verb="GET"' in line and 'resource="configmaps"' in line
        for line in lines
    )
    assert any('verb="LIST"' in line and 'scope="namespace"' in line for line in lines)
    assert "apiserver_request_duration_seconds_bucket{" in text


async def open_configmap_watches(http: aiohttp.ClientSession) -> float:
    """How many watches of namespaced ConfigMaps the gateway is serving (its
    apiserver_longrunning_requests)."""
    async with http.get("/metrics") as response:
        text = await response.text()
    return sum(
        sample.value
        for family in text_string_to_metric_families(text)
        if family.name == "apiserver_longrunning_requests"
        for sample in family.samples
        if sample.labels.get("resource") == "configmaps"
        and sample.labels.get("scope") == "namespace"
    )


async def test_a_watch_whose_client_has_gone_ends_without_waiting_for_an_event(
    http: aiohttp.ClientSession, system: System, namespace: str
) -> None:
    before = await open_configmap_watches(http)
    async with admin_session(system) as watcher:
        path = f"/api/v1/namespaces/{namespace}/configmaps?watch=1"
        responses = [await watcher.get(path) for _ in range(3)]
        assert [r.status for r in responses] == [200, 200, 200]
        assert await open_configmap_watches(http) == before + 3
        for response in responses:
            response.close()  # the connection, not only the response
    # Nothing happens in the namespace: only the closed connections end them.
    async with asyncio.timeout(10):
        while await open_configmap_watches(http) > before:  # noqa: ASYNC110 - a gauge nothing signals
            await asyncio.sleep(0.05)


PARTIAL_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"


async def test_responses_take_the_negotiated_form(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "form"},
        "data": {"k": "v"},
    }
    created = await create(http, path, body)
    async with http.get(f"{path}/form", headers={"Accept": "application/yaml"}) as response:
        assert response.status == 200 and response.content_type == "application/yaml"
        assert yaml.safe_load(await response.text()) == created
    async with http.get(path, headers={"Accept": PARTIAL_LIST}) as response:
        listed = orjson.loads(await response.read())
    assert (listed["kind"], listed["apiVersion"]) == ("PartialObjectMetadataList", "meta.k8s.io/v1")
    assert listed["items"] == [
        {
            "kind": "PartialObjectMetadata",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": created["metadata"],
        }
    ]
    one = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
    async with http.get(f"{path}/form", headers={"Accept": one}) as response:
        assert orjson.loads(await response.read())["kind"] == "PartialObjectMetadata"
    async with http.get(f"{path}/form?pretty=true") as response:
        text = await response.text()
    assert (
        text.startswith('{\n  "kind": "ConfigMap",\n  "apiVersion": "v1",')
        and orjson.loads(text) == created
    )
    refused = await get_status(http, f"{path}/form", 406, headers={"Accept": "application/xml"})
    assert refused["reason"] == "NotAcceptable"
    # Errors stay Status objects.
    missing = await get_status(http, f"{path}/none", 404, headers={"Accept": PARTIAL_LIST})
    assert missing["kind"] == "Status"


async def test_large_responses_are_gzipped_when_the_client_takes_it(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    for i in range(3):
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": f"big-{i}"},
            "data": {"k": "x" * 60_000},
        }
        await create(http, path, body)
    async with http.get(path, headers={"Accept-Encoding": "identity"}) as response:
        assert "Content-Encoding" not in response.headers
        plain = await response.read()
    async with http.get(path, headers={"Accept-Encoding": "deflate, gzip"}) as response:
        assert response.headers["Content-Encoding"] == "gzip"
        assert response.headers["Vary"] == "Accept-Encoding"
        sent = int(response.headers["Content-Length"])
        body = await response.json()
    assert [item["metadata"]["name"] for item in body["items"]] == ["big-0", "big-1", "big-2"]
    assert body["items"] == orjson.loads(plain)["items"]
    assert sent < len(plain) // 10  # 180 KB of x compress to a few hundred bytes
    async with http.get(f"{path}/big-0", headers={"Accept-Encoding": "gzip"}) as response:
        assert "Content-Encoding" not in response.headers  # under 128 KiB
    # kube takes the bare token only: a weighted gzip is not asked for.
    async with http.get(path, headers={"Accept-Encoding": "gzip;q=1.0"}) as response:
        assert "Content-Encoding" not in response.headers


AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"


async def test_aggregated_discovery(http: aiohttp.ClientSession) -> None:
    accept = f"{AGGREGATED},application/json"
    async with http.get("/api", headers={"Accept": accept}) as response:
        assert response.headers["Content-Type"] == AGGREGATED
        core = orjson.loads(await response.read())
    assert (core["kind"], core["apiVersion"]) == ("APIGroupDiscoveryList", "apidiscovery.k8s.io/v2")
    ((version,),) = [item["versions"] for item in core["items"]]
    assert (version["version"], version["freshness"]) == ("v1", "Current")
    configmaps = next(r for r in version["resources"] if r["resource"] == "configmaps")
    assert configmaps == {
        "resource": "configmaps",
        "responseKind": {"group": "", "version": "v1", "kind": "ConfigMap"},
        "scope": "Namespaced",
        "singularResource": "configmap",
        "verbs": sorted(configmaps["verbs"]),
        "shortNames": ["cm"],
    }
    assert {"create", "list", "watch", "patch"} <= set(configmaps["verbs"])
    async with http.get("/apis", headers={"Accept": accept}) as response:
        groups = orjson.loads(await response.read())
    apps = next(item for item in groups["items"] if item["metadata"].get("name") == "apps")
    deployments = next(
        r for r in apps["versions"][0]["resources"] if r["resource"] == "deployments"
    )
    assert deployments["subresources"] == [
        {
            "subresource": "status",
            "responseKind": {"group": "apps", "version": "v1", "kind": "Deployment"},
            "verbs": ["get", "patch", "update"],
        },
        {
            "subresource": "scale",
            "responseKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"},
            "verbs": ["get", "patch", "update"],
        },
    ]
    assert "" not in {item["metadata"].get("name") for item in groups["items"]}
    # A client that does not ask for it gets the plain documents.
    async with http.get("/apis") as response:
        assert response.headers["Content-Type"].startswith("application/json")
        assert orjson.loads(await response.read())["kind"] == "APIGroupList"
