"""core/v1 Events through the real gateway and services: kube's legacy field
rules as a registry tester table, the TTL they are stored with (an etcd lease
on their key, renewed by each write), and kubectl's columns."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest

from strata.etcd import Etcd
from tests.support.registry_tester import (
    Case,
    Obj,
    RegistryTester,
    answer,
    invalid,
    new_namespace,
    required,
)

# The namespace every case's event is created in (fixed by the fixture below).
NAMESPACE = "events-under-test"
DEPLOYMENT = {"kind": "Deployment", "name": "web", "namespace": NAMESPACE, "apiVersion": "apps/v1"}
# An hour and the storage's lease reuse window (5%, at most a minute).
EVENT_LEASE_SECONDS = 3600 + 60


def event(name: str, **fields: Any) -> Obj:
    body: Obj = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name},
        "involvedObject": DEPLOYMENT,
        "reason": "ScalingReplicaSet",
        "message": "Scaled up replica set web-5d4b to 3",
        "type": "Normal",
        "source": {"component": "deployment-controller"},
        "count": 1,
    }
    body.update(fields)
    return body


def new_style(name: str, **fields: Any) -> Obj:
    """An event written the events.k8s.io way (eventTime set) to core/v1."""
    body = event(name, eventTime="2026-11-21T10:00:00.123456Z", source={})
    body.update(
        reportingComponent="example.com/controller",
        reportingInstance="controller-0",
        action="Scaling",
    )
    body.update(fields)
    return body


EVENT_CASES = [
    Case(id="valid", body=event("web.1"), expect={"count": 1, "reason": "ScalingReplicaSet"}),
    Case(
        id="involved-namespace-must-match",
        body=event("web.2", involvedObject={**DEPLOYMENT, "namespace": "elsewhere"}),
        causes=(
            invalid("involvedObject.namespace", '"elsewhere"', "does not match event.namespace"),
        ),
    ),
    Case(
        id="cluster-scoped-object-only-from-default",
        body=event("node.1", involvedObject={"kind": "Node", "name": "n1"}),
        causes=(invalid("involvedObject.namespace", '""', "does not match event.namespace"),),
    ),
    Case(id="new-style", body=new_style("web.3"), expect={"action": "Scaling"}),
    Case(
        id="new-style-says-who-and-what",
        body=new_style("web.4", reportingComponent="", reportingInstance="", action="", reason=""),
        causes=(
            required("reportingComponent"),
            invalid(
                "reportingComponent",
                '""',
                "name part must be non-empty",
            ),
            invalid(
                "reportingComponent",
                '""',
                "name part must consist of alphanumeric characters, '-', '_' or '.', and must "
                "start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
                "'123-abc', regex used for validation is "
                "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
            ),
            required("reportingInstance"),
            required("action"),
            required("reason"),
        ),
    ),
    Case(
        id="new-style-limits",
        body=new_style("web.5", reason="r" * 129, action="a" * 129, message="m" * 1025),
        causes=(
            invalid("reason", '""', "can have at most 128 characters"),
            invalid("action", '""', "can have at most 128 characters"),
            invalid("message", '""', "can have at most 1024 characters"),
        ),
    ),
    Case(
        id="name-is-a-path-segment",
        body=event("web/1"),
        causes=(invalid("metadata.name", '"web/1"', "may not contain '/'"),),
    ),
]


@pytest.fixture(scope="module")
async def namespace(http: aiohttp.ClientSession) -> str:
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
    async with http.post("/api/v1/namespaces", json=body) as response:
        assert response.status in (201, 409)
    return NAMESPACE


@pytest.mark.parametrize("case", EVENT_CASES, ids=str)
async def test_events(
    http: aiohttp.ClientSession, system_etcd: Etcd, namespace: str, case: Case
) -> None:
    collection = f"/api/v1/namespaces/{namespace}/events"
    await RegistryTester(http, system_etcd, collection, "Event").run(case)


async def _lease_of(etcd: Etcd, key: bytes) -> int:
    found = await etcd.range(key)
    assert found.count == 1
    lease: int = found.kvs[0].lease
    return lease


async def test_events_are_stored_with_a_ttl(http: aiohttp.ClientSession, system_etcd: Etcd) -> None:
    namespace = await new_namespace(http, "ttl")
    collection = f"/api/v1/namespaces/{namespace}/events"
    body = event("web.ttl", involvedObject={**DEPLOYMENT, "namespace": namespace})
    created = await answer(http, "POST", collection, 201, json=body)
    key = f"/registry/events/{namespace}/web.ttl".encode()
    lease = await _lease_of(system_etcd, key)
    assert lease != 0
    assert (await system_etcd.lease_time_to_live(lease)).grantedTTL == EVENT_LEASE_SECONDS
    # An update keeps it on a lease (kube renews an event's TTL on every write).
    created["count"] = 2
    await answer(http, "PUT", f"{collection}/web.ttl", 200, json=created)
    renewed = await _lease_of(system_etcd, key)
    assert renewed != 0
    assert (await system_etcd.lease_time_to_live(renewed)).TTL > EVENT_LEASE_SECONDS - 60
    # Other resources are not given one.
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kept"}}
    await answer(http, "POST", f"/api/v1/namespaces/{namespace}/configmaps", 201, json=cm)
    assert await _lease_of(system_etcd, f"/registry/configmaps/{namespace}/kept".encode()) == 0


async def test_event_table_columns(http: aiohttp.ClientSession, namespace: str) -> None:
    collection = f"/api/v1/namespaces/{namespace}/events"
    body = event(
        "web.tabled",
        count=4,
        firstTimestamp="2026-01-01T00:00:00Z",
        lastTimestamp="2026-01-01T00:00:00Z",
        message="  Scaled up  \n",
        source={"component": "deployment-controller", "host": "node-1"},
    )
    body["involvedObject"] = {**DEPLOYMENT, "fieldPath": "spec.replicas"}
    await answer(http, "POST", collection, 201, json=body)
    accept = {"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}
    table = await answer(http, "GET", f"{collection}/web.tabled", 200, headers=accept)
    columns = [c["name"] for c in table["columnDefinitions"]]
    assert columns == [
        "Last Seen",
        "Type",
        "Reason",
        "Object",
        "Subobject",
        "Source",
        "Message",
        "First Seen",
        "Count",
        "Name",
    ]
    cells = table["rows"][0]["cells"]
    assert cells[1:7] == [
        "Normal",
        "ScalingReplicaSet",
        "deployment/web",
        "spec.replicas",
        "deployment-controller, node-1",
        "Scaled up",
    ]
    assert cells[0] == cells[7] and cells[0].endswith("d")  # days ago
    assert cells[8:] == [4, "web.tabled"]
    assert table["kind"] == "Table"
