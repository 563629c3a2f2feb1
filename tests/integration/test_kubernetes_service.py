"""The `kubernetes` Service in default, as kube's bootstrap controller keeps it:
the range's first ClusterIP, port 443 named https, and Endpoints listing the
gateways whose identity Leases are current (a Lease past its time goes, and
its gateway with it)."""

from __future__ import annotations

import dataclasses
import uuid
from datetime import UTC, datetime, timedelta
from urllib.parse import urlsplit

import aiohttp
import orjson

from services.registry.builtin.resources import ENDPOINTS as ENDPOINTS_RESOURCE
from services.registry.builtin.resources import LEASES as LEASES_RESOURCE
from services.registry.builtin.resources import SERVICES as SERVICES_RESOURCE
from services.registry.controllers.kubernetes_service import IDENTITY_SELECTOR, KubernetesService
from services.registry.generic.options import Page, Paging, Rendering, Selection
from services.registry.generic.store import Store
from strata.dev import System
from strata.storage import GrpcStorage
from tests.support.registry_tester import Obj, answer, until

SERVICE = "/api/v1/namespaces/default/services/kubernetes"
ENDPOINTS = "/api/v1/namespaces/default/endpoints/kubernetes"
LEASES = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases"


def gateway_address(system: System) -> tuple[str, int]:
    assert system.endpoints is not None
    url = urlsplit(system.endpoints.gateway)
    assert url.hostname is not None and url.port is not None
    return url.hostname, url.port


def ips(endpoints: Obj) -> list[str]:
    return [a["ip"] for s in endpoints.get("subsets") or [] for a in s.get("addresses") or []]


def stamp(moment: datetime) -> str:
    """A Lease's MicroTime."""
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def renewed_at(lease: Obj, moment: datetime) -> Obj:
    return dict(lease, spec={**lease["spec"], "renewTime": stamp(moment)})


def lease(name: str, address: str, renewed: datetime) -> Obj:
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {
            "name": name,
            "labels": {"apiserver.kubernetes.io/identity": "strata-gateway"},
            "annotations": {"strata.dev/advertise-address": address},
        },
        "spec": {
            "holderIdentity": name,
            "leaseDurationSeconds": 15,
            "renewTime": stamp(renewed),
        },
    }


async def test_the_kubernetes_service_points_at_the_gateway(
    http: aiohttp.ClientSession, system: System
) -> None:
    host, port = gateway_address(system)
    # The gateway's port is known once its first Lease is in.
    service = await until(
        http, SERVICE, lambda s: s["spec"]["ports"][0]["targetPort"] == port, absent_ok=True
    )
    assert service["metadata"]["labels"] == {"component": "apiserver", "provider": "kubernetes"}
    assert service["spec"]["clusterIP"] == "10.96.0.1"
    assert service["spec"]["type"] == "ClusterIP"
    assert service["spec"]["ports"] == [
        {"name": "https", "port": 443, "protocol": "TCP", "targetPort": port}
    ]
    endpoints = await until(http, ENDPOINTS, lambda e: ips(e) == [host], absent_ok=True)
    assert endpoints["subsets"] == [
        {"addresses": [{"ip": host}], "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}
    ]
    # A Service deleted behind the controller's back comes back.
    await answer(http, "DELETE", SERVICE, 200)
    back = await until(http, SERVICE, lambda _: True, absent_ok=True)
    assert back["spec"]["clusterIP"] == "10.96.0.1"


async def test_gateways_come_and_go_with_their_leases(
    http: aiohttp.ClientSession, system: System
) -> None:
    host, port = gateway_address(system)
    now = datetime.now(UTC)
    await answer(
        http, "POST", LEASES, 201, json=lease("strata-gateway-other", f"127.0.0.2:{port}", now)
    )
    stale = lease("strata-gateway-gone", f"127.0.0.3:{port}", now - timedelta(minutes=1))
    await answer(http, "POST", LEASES, 201, json=stale)
    await until(http, ENDPOINTS, lambda e: ips(e) == sorted([host, "127.0.0.2"]))
    # The stale Lease is deleted; the live one's gateway leaves once it goes.
    await until(http, f"{LEASES}?fieldSelector=metadata.name=strata-gateway-gone",
                lambda listed: listed["items"] == [])  # fmt: skip
    await answer(http, "DELETE", f"{LEASES}/strata-gateway-other", 200)
    await until(http, ENDPOINTS, lambda e: ips(e) == [host])


class StaleLeases(Store):
    """The Leases Store, whose lists answer with a page read earlier (a watch
    cache that has not caught up yet)."""

    stale: Page

    async def list(self, selection: Selection, paging: Paging, rendering: Rendering) -> Page:
        return self.stale


async def test_a_lease_renewed_after_the_round_read_it_is_not_deleted(
    http: aiohttp.ClientSession, system: System
) -> None:
    assert system.endpoints is not None
    name = f"strata-gateway-{uuid.uuid4().hex[:8]}"
    now = datetime.now(UTC)
    body = lease(name, "", now)
    del body["metadata"]["annotations"]  # no gateway address: the Endpoints stay
    created = await answer(http, "POST", LEASES, 201, json=body)
    async with system.grpc_channel("cacher", "registry") as channel:
        storage = GrpcStorage(channel)
        leases = StaleLeases(LEASES_RESOURCE, storage)
        # What the round reads: the gateways' Leases, this one as it was a
        # minute past its renewal...
        page = await Store(LEASES_RESOURCE, storage).list(
            leases.selection("kube-system", IDENTITY_SELECTOR, ""), Paging(), Rendering()
        )
        expired = dict(
            created, spec={**created["spec"], "renewTime": "2020-01-01T00:00:00.000000Z"}
        )
        items = [i for i in page.items if orjson.loads(i)["metadata"]["name"] != name]
        leases.stale = dataclasses.replace(page, items=[*items, orjson.dumps(expired)])
        # ...while it has been renewed since.
        renewal = dict(
            created, spec={**created["spec"], "renewTime": stamp(now + timedelta(seconds=1))}
        )
        await answer(http, "PUT", f"{LEASES}/{name}", 200, json=renewal)
        controller = KubernetesService(
            Store(SERVICES_RESOURCE, storage),
            Store(ENDPOINTS_RESOURCE, storage),
            leases,
            cluster_ip="10.96.0.1",
        )
        await controller.round_once()
        await storage.close()
    # The delete was guarded by what the round read, and met the renewal.
    await answer(http, "GET", f"{LEASES}/{name}", 200)
    await answer(http, "DELETE", f"{LEASES}/{name}", 200)
