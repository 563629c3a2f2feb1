"""The `kubernetes` Service in default (kube's bootstrap controller and lease
endpoint reconciler): a ClusterIP Service on the range's first address, port
443 named https onto the gateways' port, whose Endpoints list the gateways
whose identity Leases are current. Leases past their time are deleted, and
their gateways leave the Endpoints.

Each round reads from the watch cache (resourceVersion "0"), as kube's
controllers read their informers' caches, so the rounds cost etcd nothing.
Every write is guarded by what was read (a delete by the Lease's uid and
resourceVersion, an update by compare-and-swap, a create by the name): a read
the cache had not caught up with makes the write fail (a failed round, logged),
and the next round sees the change.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import orjson

from services.registry.controllers import rounds
from services.registry.generic.options import Paging, Rendering
from services.registry.generic.store import Store
from strata import telemetry
from strata.api import meta
from strata.api.errors import StatusError
from strata.storage import Preconditions

NAME = "kubernetes"
NAMESPACE = "default"
IDENTITY_SELECTOR = "apiserver.kubernetes.io/identity=strata-gateway"
ADDRESS_ANNOTATION = "strata.dev/advertise-address"
LABELS = {"component": "apiserver", "provider": "kubernetes"}
INTERVAL_SECONDS = 1.0
# Reads answered by the watch cache.
CACHED = "0"
Obj = dict[str, Any]

log = telemetry.get_logger("strata.registry.kubernetes_service")


def _expired(lease: Obj, now: datetime) -> bool:
    spec = lease.get("spec") or {}
    renewed = spec.get("renewTime")
    if not renewed:
        return True
    age = (now - meta.parse_rfc3339(renewed)).total_seconds()
    return age > int(spec.get("leaseDurationSeconds") or 0)


def _subsets(addresses: list[str]) -> list[Obj]:
    """One subset per port the gateways serve on, their IPs in order."""
    by_port: dict[int, set[str]] = {}
    for address in addresses:
        host, _, port = address.rpartition(":")
        by_port.setdefault(int(port), set()).add(host.strip("[]"))
    return [
        {
            "addresses": [{"ip": ip} for ip in sorted(ips)],
            "ports": [{"name": "https", "port": port, "protocol": "TCP"}],
        }
        for port, ips in sorted(by_port.items())
    ]


class KubernetesService:
    def __init__(
        self,
        services: Store,
        endpoints: Store,
        leases: Store,
        cluster_ip: str,
        interval: float = INTERVAL_SECONDS,
    ) -> None:
        self._services, self._endpoints, self._leases = services, endpoints, leases
        self._cluster_ip = cluster_ip
        self._interval = interval

    async def run(self) -> None:
        await rounds.every(self._interval, "kubernetes service", self.round_once)

    async def round_once(self) -> None:
        subsets = _subsets(await self._gateways())
        if not subsets and await self._current(self._services) is None:
            return  # made once the gateways' port is known, as it is at once in kube
        if subsets:
            await self._ensure_service(subsets[0]["ports"][0]["port"])
        await self._ensure_endpoints(subsets)

    async def _gateways(self) -> list[str]:
        """The addresses of the gateways alive; the Leases of the others go."""
        selection = self._leases.selection("kube-system", IDENTITY_SELECTOR, "")
        page = await self._leases.list(selection, Paging(resource_version=CACHED), Rendering())
        now = datetime.now(UTC)
        addresses = []
        for item in page.items:
            lease = orjson.loads(item)
            metadata = lease["metadata"]
            if _expired(lease, now):
                read = Preconditions(
                    uid=metadata["uid"], resource_version=metadata["resourceVersion"]
                )
                try:
                    await self._leases.delete("kube-system", metadata["name"], read)
                    log.info("gateway lease expired", lease=metadata["name"])
                except StatusError as e:  # gone already, or renewed since the read
                    if e.reason not in ("NotFound", "Conflict"):
                        raise
            elif address := (metadata.get("annotations") or {}).get(ADDRESS_ANNOTATION):
                addresses.append(str(address))
        return addresses

    async def _current(self, store: Store) -> Obj | None:
        try:
            found: Obj = orjson.loads(await store.get(NAMESPACE, NAME, CACHED, Rendering()))
        except StatusError as e:
            if e.reason == "NotFound":
                return None
            raise
        return found

    async def _ensure_service(self, target_port: int) -> None:
        ports = [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": target_port}]
        current = await self._current(self._services)
        if current is None:
            service = {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": NAME, "labels": LABELS},
                "spec": {
                    "type": "ClusterIP",
                    "clusterIP": self._cluster_ip,
                    "ports": ports,
                    "sessionAffinity": "None",
                },
            }
            await self._services.create(NAMESPACE, orjson.dumps(service))
            log.info("created the kubernetes service", cluster_ip=self._cluster_ip)
        elif current["spec"].get("ports") != ports:
            current["spec"]["ports"] = ports
            await self._services.update(NAMESPACE, NAME, orjson.dumps(current))

    async def _ensure_endpoints(self, subsets: list[Obj]) -> None:
        current = await self._current(self._endpoints)
        if current is None:
            endpoints = {
                "apiVersion": "v1",
                "kind": "Endpoints",
                "metadata": {"name": NAME, "labels": LABELS},
                "subsets": subsets,
            }
            await self._endpoints.create(NAMESPACE, orjson.dumps(endpoints))
        elif (current.get("subsets") or []) != subsets:
            current["subsets"] = subsets
            await self._endpoints.update(NAMESPACE, NAME, orjson.dumps(current))
            log.info("kubernetes endpoints changed", subsets=subsets)
