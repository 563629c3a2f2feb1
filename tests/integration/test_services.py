"""core/v1 Services and Endpoints through the real gateway and services:
kube's defaults and rules as registry tester tables, ClusterIP and NodePort
allocation under concurrency, exhausted ranges, and the repair loop."""

from __future__ import annotations

import asyncio
import copy
import ipaddress
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson
import pytest

from services.registry.builtin.allocation import IPRange, Owner, PortRange, ServiceAllocations
from services.registry.builtin.resources import NAMESPACES, SERVICES
from services.registry.controllers.repair import AllocationRepair
from services.registry.generic.options import Paging
from services.registry.generic.store import Store
from strata.api import names
from strata.api.errors import StatusError
from strata.etcd import Etcd, prefix_end
from strata.storage import GrpcStorage
from tests.support import hops
from tests.support.registry_tester import (
    Case,
    Obj,
    RegistryTester,
    answer,
    as_json,
    invalid,
    new_namespace,
    refused,
    required,
)

CLUSTER_IPS = ipaddress.ip_network("10.96.0.0/16")
PORT_RANGE = "must be between 1 and 65535, inclusive"


def service(name: str, *ports: int, **spec: Any) -> Obj:
    body_spec: Obj = {"ports": [{"port": p} for p in ports], "selector": {"app": name}, **spec}
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": body_spec}


def retype(kind: str) -> Any:
    def change(obj: Obj) -> None:
        obj["spec"]["type"] = kind

    return change


def change_ip(obj: Obj) -> None:
    obj["spec"]["clusterIP"] = obj["spec"]["clusterIPs"][0] = "10.96.250.250"


def drop_allocated(obj: Obj) -> None:
    """A PUT that leaves out what the server allocated, as an applied manifest would."""
    for field in ("clusterIP", "clusterIPs"):
        del obj["spec"][field]
    for port in obj["spec"]["ports"]:
        port.pop("nodePort", None)


SERVICE_CASES = [
    Case(
        id="defaults",
        body=service("defaults", 80),
        expect={
            "spec.type": "ClusterIP",
            "spec.sessionAffinity": "None",
            "spec.ports": [{"port": 80, "protocol": "TCP", "targetPort": 80}],
            "spec.ipFamilies": ["IPv4"],
            "spec.ipFamilyPolicy": "SingleStack",
            "spec.internalTrafficPolicy": "Cluster",
            "status": {"loadBalancer": {}},
        },
    ),
    Case(
        id="headless",
        body=service("headless", 80, clusterIP="None"),
        expect={"spec.clusterIP": "None", "spec.clusterIPs": ["None"]},
    ),
    Case(
        id="external-name",
        body=service("external", type="ExternalName", externalName="db.example.com"),
        expect={"spec.clusterIP": None, "spec.externalName": "db.example.com"},
    ),
    Case(
        id="put-without-allocated-values-keeps-them",
        body=service("kept", 80, type="NodePort"),
        update=drop_allocated,
        expect={"spec.type": "NodePort"},
    ),
    Case(
        id="name-is-a-dns-1035-label",
        body=service("1abc", 80),
        causes=(invalid("metadata.name", '"1abc"', names.DNS1035_LABEL_ERROR),),
    ),
    Case(id="ports-required", body=service("noports"), causes=(required("spec.ports"),)),
    Case(
        id="port-range",
        body=service("bigport", 70000),
        # targetPort defaults to the port, and is refused with it.
        causes=(
            invalid("spec.ports[0].port", "70000", PORT_RANGE),
            invalid("spec.ports[0].targetPort", "70000", PORT_RANGE),
        ),
    ),
    Case(
        id="port-names-required-when-several",
        body=service("twoports", 80, 443),
        causes=(required("spec.ports[0].name"), required("spec.ports[1].name")),
    ),
    Case(
        id="node-port-not-for-cluster-ip",
        body={**service("nodeport"), "spec": {"ports": [{"port": 80, "nodePort": 30080}]}},
        causes=(
            (
                "FieldValueForbidden",
                "spec.ports[0].nodePort",
                "Forbidden: may not be used when `type` is 'ClusterIP'",
            ),
        ),
    ),
    Case(
        id="type-supported",
        body=service("badtype", 80, type="Magic"),
        causes=(
            (
                "FieldValueNotSupported",
                "spec.type",
                'Unsupported value: "Magic": supported values: "ClusterIP", "ExternalName", '
                '"LoadBalancer", "NodePort"',
            ),
        ),
    ),
    Case(
        id="cluster-ip-is-an-ip",
        body=service("badip", 80, clusterIP="ten"),
        causes=(
            invalid(
                "spec.clusterIPs[0]",
                '"ten"',
                "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
            ),
        ),
    ),
    Case(
        id="node-port-not-headless",
        body=service("headlessnp", 80, clusterIP="None", type="NodePort"),
        causes=(
            invalid(
                "spec.clusterIPs[0]", '"None"', "may not be set to 'None' for NodePort services"
            ),
        ),
    ),
    Case(
        id="external-name-required",
        body=service("noexternal", type="ExternalName"),
        causes=(required("spec.externalName"),),
    ),
    Case(
        id="cluster-ip-may-not-change",
        body=service("fixedip", 80),
        update=change_ip,
        causes=(invalid("spec.clusterIPs[0]", '"10.96.250.250"', "may not change once set"),),
    ),
]

ENDPOINT_CASES = [
    Case(
        id="endpoints-stored",
        body={
            "apiVersion": "v1",
            "kind": "Endpoints",
            "metadata": {"name": "ep"},
            "subsets": [{"addresses": [{"ip": "10.1.2.3"}], "ports": [{"port": 8080}]}],
        },
        expect={
            "subsets": [
                {"addresses": [{"ip": "10.1.2.3"}], "ports": [{"port": 8080, "protocol": "TCP"}]}
            ]
        },
    ),
    Case(
        id="endpoint-address-and-port",
        body={
            "apiVersion": "v1",
            "kind": "Endpoints",
            "metadata": {"name": "badep"},
            "subsets": [{"addresses": [{"ip": "nope"}], "ports": [{"port": 0}]}],
        },
        causes=(
            invalid(
                "subsets[0].addresses[0].ip",
                '"nope"',
                "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
            ),
            invalid("subsets[0].ports[0].port", "0", PORT_RANGE),
        ),
    ),
]


@pytest.fixture(scope="module")
async def namespace(http: aiohttp.ClientSession) -> str:
    return await new_namespace(http, "svc")


@pytest.mark.parametrize("case", SERVICE_CASES, ids=str)
async def test_services(
    http: aiohttp.ClientSession, system_etcd: Etcd, namespace: str, case: Case
) -> None:
    collection = f"/api/v1/namespaces/{namespace}/services"
    await RegistryTester(http, system_etcd, collection, "Service").run(case)


@pytest.mark.parametrize("case", ENDPOINT_CASES, ids=str)
async def test_endpoints(
    http: aiohttp.ClientSession, system_etcd: Etcd, namespace: str, case: Case
) -> None:
    collection = f"/api/v1/namespaces/{namespace}/endpoints"
    await RegistryTester(http, system_etcd, collection, "Endpoints").run(case)


async def _allocated(etcd: Etcd, prefix: str) -> set[str]:
    start = f"/registry/{prefix}/".encode()
    listed = await etcd.range(start, prefix_end(start))
    return {kv.key.decode().removeprefix(f"/registry/{prefix}/") for kv in listed.kvs}


async def test_fifty_concurrent_creates_get_distinct_ips_and_ports(
    http: aiohttp.ClientSession, system_etcd: Etcd, namespace: str
) -> None:
    collection = f"/api/v1/namespaces/{namespace}/services"
    bodies = [service(f"many-{i}", 80, type="NodePort") for i in range(50)]
    created = await asyncio.gather(*(answer(http, "POST", collection, 201, json=b) for b in bodies))
    ips = {c["spec"]["clusterIP"] for c in created}
    ports = {c["spec"]["ports"][0]["nodePort"] for c in created}
    assert len(ips) == 50 and len(ports) == 50
    assert all(ipaddress.ip_address(ip) in CLUSTER_IPS for ip in ips)
    assert all(30000 <= p <= 32767 for p in ports)
    assert ips <= await _allocated(system_etcd, "ipaddresses")
    assert {str(p) for p in ports} <= await _allocated(system_etcd, "servicenodeports")

    await asyncio.gather(
        *(answer(http, "DELETE", f"{collection}/many-{i}", 200) for i in range(50))
    )
    assert not ips & await _allocated(system_etcd, "ipaddresses")
    assert not {str(p) for p in ports} & await _allocated(system_etcd, "servicenodeports")


async def test_taken_and_out_of_range_values_are_refused(
    http: aiohttp.ClientSession, system_etcd: Etcd, namespace: str
) -> None:
    collection = f"/api/v1/namespaces/{namespace}/services"
    first = await answer(http, "POST", collection, 201, json=service("first", 80, type="NodePort"))
    ip, port = first["spec"]["clusterIP"], first["spec"]["ports"][0]["nodePort"]
    before = await _allocated(system_etcd, "ipaddresses")

    cases = [
        (
            service("sameip", 80, clusterIP=ip),
            "spec.clusterIPs",
            f'Invalid value: ["{ip}"]: failed to allocate IP {ip}: provided IP is '
            "already allocated",
        ),
        (
            service("farip", 80, clusterIP="192.168.0.1"),
            "spec.clusterIPs",
            'Invalid value: ["192.168.0.1"]: failed to allocate IP 192.168.0.1: the '
            "provided IP (192.168.0.1) is not in the valid range. The range of valid IPs is "
            "10.96.0.0/16",
        ),
        (
            {
                **service("sameport"),
                "spec": {"type": "NodePort", "ports": [{"port": 80, "nodePort": port}]},
            },
            "spec.ports[0].nodePort",
            f"Invalid value: {port}: provided port is already allocated",
        ),
        (
            {
                **service("lowport"),
                "spec": {"type": "NodePort", "ports": [{"port": 80, "nodePort": 80}]},
            },
            "spec.ports[0].nodePort",
            "Invalid value: 80: provided port is not in the valid range. The range of valid "
            "ports is 30000-32767",
        ),
    ]
    for body, field, message in cases:
        status = await refused(http, system_etcd, "POST", collection, **as_json(body))
        assert (status["code"], status["reason"]) == (422, "Invalid"), status
        assert [(c["field"], c["message"]) for c in status["details"]["causes"]] == [
            (field, message)
        ]
    # The port refusals came after an IP was claimed for them: it was given back.
    assert await _allocated(system_etcd, "ipaddresses") == before


async def test_dry_run_allocates_nothing(
    http: aiohttp.ClientSession, system_etcd: Etcd, namespace: str
) -> None:
    collection = f"/api/v1/namespaces/{namespace}/services"
    before = await _allocated(system_etcd, "ipaddresses")
    would = await answer(
        http, "POST", f"{collection}?dryRun=All", 201, json=service("dry", 80, type="NodePort")
    )
    assert ipaddress.ip_address(would["spec"]["clusterIP"]) in CLUSTER_IPS
    assert would["spec"]["ports"][0]["nodePort"] >= 30000
    assert await _allocated(system_etcd, "ipaddresses") == before


async def test_changing_type_releases_and_allocates(
    http: aiohttp.ClientSession, system_etcd: Etcd, namespace: str
) -> None:
    collection = f"/api/v1/namespaces/{namespace}/services"
    created = await answer(
        http, "POST", collection, 201, json=service("retyped", 80, type="NodePort")
    )
    port = str(created["spec"]["ports"][0]["nodePort"])
    assert port in await _allocated(system_etcd, "servicenodeports")
    changed = copy.deepcopy(created)
    changed["spec"]["type"] = "ClusterIP"
    updated = await answer(http, "PUT", f"{collection}/retyped", 200, json=changed)
    assert "nodePort" not in updated["spec"]["ports"][0]
    assert port not in await _allocated(system_etcd, "servicenodeports")

    external = copy.deepcopy(updated)
    external["spec"] = {"type": "ExternalName", "externalName": "x.example.com"}
    await answer(http, "PUT", f"{collection}/retyped", 200, json=external)
    assert created["spec"]["clusterIP"] not in await _allocated(system_etcd, "ipaddresses")


async def test_repair_reclaims_what_a_service_removed_behind_its_back_held(
    http: aiohttp.ClientSession, system_etcd: Etcd, namespace: str
) -> None:
    collection = f"/api/v1/namespaces/{namespace}/services"
    created = await answer(http, "POST", collection, 201, json=service("vanishing", 80))
    ip = created["spec"]["clusterIP"]
    await system_etcd.delete_range(f"/registry/services/specs/{namespace}/vanishing".encode())
    again = service("reuse", 80, clusterIP=ip)
    async with asyncio.timeout(60):
        while True:  # refused as allocated until the repair loop releases it
            async with http.post(collection, json=again) as response:
                if response.status == 201:
                    break
                assert response.status == 422, await response.text()
            await asyncio.sleep(0.5)


async def test_repair_restores_an_allocation_deleted_behind_its_back(
    http: aiohttp.ClientSession, system_etcd: Etcd, namespace: str
) -> None:
    collection = f"/api/v1/namespaces/{namespace}/services"
    created = await answer(http, "POST", collection, 201, json=service("unrecorded", 80))
    ip = created["spec"]["clusterIP"]
    await system_etcd.delete_range(f"/registry/ipaddresses/{ip}".encode())
    async with asyncio.timeout(30):
        while True:
            if ip in await _allocated(system_etcd, "ipaddresses"):
                break
            await asyncio.sleep(0.3)


@dataclass(frozen=True)
class Tiny:
    storage: GrpcStorage
    store: Store
    allocations: ServiceAllocations
    namespace: str


@pytest.fixture
async def tiny(storage_address: str) -> AsyncIterator[Tiny]:
    """A Services store of the registry's own, on ranges of six addresses and
    three ports, over the storage service and its etcd."""
    channel = hops.dial(storage_address)
    storage = GrpcStorage(channel)
    allocations = ServiceAllocations(storage, IPRange("10.200.0.0/29"), PortRange("30000-30002"))
    namespace = f"tiny-{uuid.uuid4().hex[:8]}"
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
    await Store(NAMESPACES, storage).create("", orjson.dumps(body))
    services = Store(SERVICES, storage, allocations)
    yield Tiny(storage, services, allocations, namespace)
    await services.delete_collection(services.selection(namespace, "", ""), Paging())
    for ip in await allocations.ips.allocated():
        await allocations.ips.release(ip)
    for port in await allocations.ports.allocated():
        await allocations.ports.release(port)
    await storage.close()
    await channel.close()


async def test_an_exhausted_range_is_a_clear_error(tiny: Tiny) -> None:
    store, allocations, namespace = tiny.store, tiny.allocations, tiny.namespace
    for i in range(3):
        await store.create(namespace, orjson.dumps(service(f"np-{i}", 80, type="NodePort")))
    with pytest.raises(StatusError) as raised:
        await store.create(namespace, orjson.dumps(service("np-3", 80, type="NodePort")))
    # kube v1.36 (--service-node-port-range=30000-30002, a fourth NodePort Service).
    assert (raised.value.code, raised.value.reason) == (500, "InternalError")
    assert raised.value.status()["message"] == (
        "Internal error occurred: failed to allocate a nodePort: range is full"
    )
    assert raised.value.details == {
        "causes": [{"message": "failed to allocate a nodePort: range is full"}]
    }
    for i in range(3):
        await store.create(namespace, orjson.dumps(service(f"ip-{i}", 80)))
    assert len(await allocations.ips.allocated()) == 6
    with pytest.raises(StatusError) as raised:
        await store.create(namespace, orjson.dumps(service("ip-3", 80)))
    assert (raised.value.code, raised.value.reason) == (500, "InternalError")
    assert raised.value.message == (
        "Internal error occurred: failed to allocate a serviceIP: range is full"
    )


def _named(obj: Obj) -> Obj:
    """obj as a NodePort Service whose ports have names (more than one must)."""
    obj["spec"]["type"] = "NodePort"
    for i, port in enumerate(obj["spec"]["ports"]):
        port["name"] = f"p{i}"
    return obj


async def test_many_ports_are_claimed_at_once_or_not_at_all(tiny: Tiny) -> None:
    """A Service with more ports than the range has free is refused as kube
    refuses it (500, range full) with nothing left allocated; ports of one
    port number (TCP and UDP) share a node port, as in kube; the rest each
    get one of their own."""
    store, allocations, namespace = tiny.store, tiny.allocations, tiny.namespace
    with pytest.raises(StatusError) as raised:
        await store.create(namespace, orjson.dumps(_named(service("many", 1, 2, 3, 4))))
    assert (raised.value.code, raised.value.reason) == (500, "InternalError")
    assert raised.value.status()["message"] == (
        "Internal error occurred: failed to allocate a nodePort: range is full"
    )
    assert await allocations.ports.allocated() == {}
    shared = _named(service("dns", 53, 53, 80))
    shared["spec"]["ports"][1]["protocol"] = "UDP"
    created = orjson.loads(await store.create(namespace, orjson.dumps(shared)))
    node_ports = [port["nodePort"] for port in created["spec"]["ports"]]
    assert node_ports[0] == node_ports[1] != node_ports[2]
    assert set(await allocations.ports.allocated()) == {str(n) for n in node_ports}


async def test_repair_waits_before_releasing_a_leak(tiny: Tiny) -> None:
    """A claim whose Service is not stored (yet) is only released after the
    loop has seen it leaked for its rounds in a row."""
    allocations = tiny.allocations
    repair = AllocationRepair(tiny.storage, allocations, leak_rounds=2)
    ip = await allocations.ips.claim_next(Owner(namespace="nowhere", name="in-flight"))
    await repair.repair_once()
    assert ip in await allocations.ips.allocated()
    await repair.repair_once()
    assert ip not in await allocations.ips.allocated()


async def test_ten_thousand_node_ports_are_refused_while_the_api_answers(
    http: aiohttp.ClientSession, system_etcd: Etcd, namespace: str
) -> None:
    """kube v1.36 answers a NodePort Service of 10,000 ports (more than the
    default range's 2,768) 500 "range is full" (in 10.6 s there); strata claims
    them in one batch and keeps answering meanwhile: its managed fields and
    checks of so large an object run off the registry's event loop."""
    collection = f"/api/v1/namespaces/{namespace}/services"
    before = await _allocated(system_etcd, "servicenodeports")
    many = _named(service("ten-thousand", *range(1, 10_001)))
    create = asyncio.create_task(http.post(collection, json=many))
    slowest = 0.0
    while not create.done():
        began = asyncio.get_running_loop().time()
        for path in ("/readyz", collection):
            async with http.get(path) as response:
                assert response.status == 200
        slowest = max(slowest, asyncio.get_running_loop().time() - began)
        await asyncio.sleep(0.1)
    async with await create as response:
        body = await response.json()
    assert response.status == 500, body
    message = "failed to allocate a nodePort: range is full"
    assert body == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": f"Internal error occurred: {message}", "reason": "InternalError",
        "details": {"causes": [{"message": message}]}, "code": 500,
    }  # fmt: skip
    assert await _allocated(system_etcd, "servicenodeports") == before
    assert slowest < 1.0
