"""ClusterIP and NodePort allocation for Services, kept in etcd so that
registries running side by side never hand out one address twice.

Every allocated value is its own key (kube's IPAddress objects, for ports as
for addresses), written create-if-absent: two concurrent creates that pick the
same value cannot both succeed, and the loser picks again. A Service's values
are claimed before it is stored and released when its write fails or it is
deleted; the repair loop (services/registry/controllers/repair.py) reclaims what a Service
removed behind the registry's back leaves allocated.

A Service with many ports takes its node ports in one go: the allocations are
read once, the free values drawn, and their keys written a batch at a time;
more ports than the range has free are refused before anything is written.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import random
from dataclasses import dataclass
from typing import Any

import orjson

from services.registry.generic.strategy import Finish
from strata.api import errors
from strata.api.causes import invalid_value
from strata.api.errors import Cause, StatusError
from strata.storage import GetOptions, KeyExists, KeyNotFound, ListOptions, Storage

Obj = dict[str, Any]
# Candidates drawn at random before a scan for a free value.
_RANDOM_PICKS = 16
_CLAIM_ATTEMPTS = 32
# How many allocation keys are written at once.
_WRITES_AT_ONCE = 64


class RangeFull(Exception):
    pass


class IPRange:
    """--service-cluster-ip-range: every address but the network's own and its
    broadcast address."""

    def __init__(self, cidr: str) -> None:
        self._network = ipaddress.ip_network(cidr, strict=False)
        if self._network.num_addresses < 4:
            raise ValueError(f"service IP range {cidr} is too small")
        self.size = min(self._network.num_addresses - 2, 1 << 24)

    def value(self, offset: int) -> str:
        return str(self._network.network_address + 1 + offset)

    def contains(self, value: str) -> bool:
        try:
            address = ipaddress.ip_address(value)
        except ValueError:
            return False
        network = self._network
        return (
            address in network
            and address != network.network_address
            and address != network.broadcast_address
        )

    def __str__(self) -> str:
        return str(self._network)


class PortRange:
    """--service-node-port-range, "30000-32767"."""

    def __init__(self, spec: str) -> None:
        low, _, high = spec.partition("-")
        try:
            self.low, self.high = int(low), int(high or low)
        except ValueError:
            raise ValueError(f"service node port range {spec} is not low-high") from None
        if not 0 < self.low <= self.high <= 65535:
            raise ValueError(f"service node port range {spec} is not a range of ports")
        self.size = self.high - self.low + 1

    def value(self, offset: int) -> str:
        return str(self.low + offset)

    def contains(self, value: str) -> bool:
        return value.isdigit() and self.low <= int(value) <= self.high

    def __str__(self) -> str:
        return f"{self.low}-{self.high}"


@dataclass(frozen=True, kw_only=True)
class Owner:
    namespace: str
    name: str
    uid: str = ""


class Allocator:
    """One range's allocations under one key prefix."""

    def __init__(
        self, storage: Storage, prefix: str, values: IPRange | PortRange, kind: str
    ) -> None:
        self._storage = storage
        self.prefix = prefix
        self.values = values
        self._kind = kind

    def _record(self, value: str, owner: Owner) -> bytes:
        parent = {"group": "", "resource": "services", **owner.__dict__}
        return orjson.dumps(
            {
                "kind": self._kind,
                "apiVersion": "networking.k8s.io/v1",
                "metadata": {"name": value},
                "spec": {"parentRef": parent},
            }
        )

    async def allocated(self) -> dict[str, Owner]:
        """Every allocated value and whose it is (a consistent read)."""
        listed = await self._storage.list(self.prefix, ListOptions(resource_version=""))
        owners = {}
        for item in listed.items:
            parent = orjson.loads(item.value).get("spec", {}).get("parentRef", {})
            owners[item.key.removeprefix(self.prefix)] = Owner(
                namespace=parent.get("namespace", ""),
                name=parent.get("name", ""),
                uid=parent.get("uid", ""),
            )
        return owners

    async def claim(self, value: str, owner: Owner, *, dry_run: bool = False) -> None:
        """Allocate value; KeyExists when it is already allocated."""
        key = self.prefix + value
        if dry_run:
            try:
                await self._storage.get(key, GetOptions(resource_version=""))
            except KeyNotFound:
                return
            raise KeyExists(key, "allocated")
        await self._storage.create(key, self._record(value, owner))

    async def claim_next(self, owner: Owner, *, dry_run: bool = False) -> str:
        """Allocate some free value; RangeFull when there is none."""
        (value,) = await self.claim_many(owner, 1, dry_run=dry_run)
        return value

    async def claim_many(self, owner: Owner, count: int, *, dry_run: bool = False) -> list[str]:
        """Allocate count free values (RangeFull, with none of them kept, when
        the range has not that many free)."""
        claimed: list[str] = []
        try:
            for _ in range(_CLAIM_ATTEMPTS):
                taken = set(await self.allocated()) | set(claimed)
                wanted = self._pick(taken, count - len(claimed))
                if dry_run:
                    return wanted
                for start in range(0, len(wanted), _WRITES_AT_ONCE):
                    batch = wanted[start : start + _WRITES_AT_ONCE]
                    written = await asyncio.gather(
                        *(self.claim(value, owner) for value in batch), return_exceptions=True
                    )
                    for value, result in zip(batch, written, strict=True):
                        if result is None:
                            claimed.append(value)
                        elif not isinstance(result, KeyExists):
                            raise result
                if len(claimed) == count:
                    return claimed
                # Others took some meanwhile: draw again for those.
            raise RangeFull(str(self.values))
        except BaseException:
            for value in claimed:
                await self.release(value)
            raise

    def _pick(self, taken: set[str], count: int) -> list[str]:
        """count distinct values not in taken, drawn at random."""
        size = self.values.size
        if size - len(taken) < count:
            raise RangeFull(str(self.values))
        picked: list[str] = []
        chosen = set(taken)
        for _ in range(_RANDOM_PICKS * count):
            if len(picked) == count:
                return picked
            value = self.values.value(random.randrange(size))
            if value not in chosen:
                picked.append(value)
                chosen.add(value)
        start = random.randrange(size)
        for step in range(size):
            if len(picked) == count:
                break
            value = self.values.value((start + step) % size)
            if value not in chosen:
                picked.append(value)
                chosen.add(value)
        if len(picked) < count:
            raise RangeFull(str(self.values))
        return picked

    async def release(self, value: str) -> None:
        with contextlib.suppress(KeyNotFound):
            await self._storage.delete(self.prefix + value)


CLUSTER_IP, NODE_PORT, LOAD_BALANCER, EXTERNAL_NAME = (
    "ClusterIP",
    "NodePort",
    "LoadBalancer",
    "ExternalName",
)
HEADLESS = "None"


def needs_cluster_ip(spec: Obj) -> bool:
    return spec.get("type", CLUSTER_IP) != EXTERNAL_NAME and spec.get("clusterIP") != HEADLESS


def needs_node_ports(spec: Obj) -> bool:
    return spec.get("type") in (NODE_PORT, LOAD_BALANCER)


def owner_of(obj: Obj) -> Owner:
    metadata = obj.get("metadata") or {}
    return Owner(
        namespace=metadata.get("namespace", ""),
        name=metadata.get("name", ""),
        uid=metadata.get("uid", ""),
    )


def _refusal(obj: Obj, cause: Cause) -> StatusError:
    return errors.invalid("Service", obj["metadata"].get("name", ""), [cause])


class ServiceAllocations:
    """The Service resource's write hooks: ClusterIPs and NodePorts claimed
    before a Service is stored, released when the write fails or it goes."""

    def __init__(self, storage: Storage, cluster_ips: IPRange, node_ports: PortRange) -> None:
        self.ips = Allocator(storage, "/ipaddresses/", cluster_ips, "IPAddress")
        self.ports = Allocator(storage, "/servicenodeports/", node_ports, "ServiceNodePort")

    async def begin_create(self, obj: Obj, *, dry_run: bool) -> Finish:
        return await self._allocate(obj, None, dry_run)

    async def begin_update(self, obj: Obj, old: Obj, *, dry_run: bool) -> Finish:
        return await self._allocate(obj, old, dry_run)

    async def after_delete(self, obj: Obj) -> None:
        await self._release(held_values(obj))

    async def _allocate(self, obj: Obj, old: Obj | None, dry_run: bool) -> Finish:
        """Claim what obj needs that old (if any) did not have; the Finish
        releases it again if the write fails, or what old no longer needs
        once it succeeds. Values asked for by number are all checked before
        anything is claimed, so a refused request writes nothing."""
        spec = obj.setdefault("spec", {})
        had_ips, had_ports = held_values(old) if old is not None else (set(), set())
        owner = owner_of(obj)
        ip: str | None = None
        if needs_cluster_ip(spec) and (spec.get("clusterIP") or "") not in had_ips:
            ip = spec.get("clusterIP") or ""
        ports: list[tuple[int, str]] = []
        if needs_node_ports(spec):
            for i, port in enumerate(spec.get("ports") or []):
                number = str(port.get("nodePort") or "")
                # A port number held already, or named twice (for two protocols).
                if not (number and (number in had_ports or any(number == n for _, n in ports))):
                    ports.append((i, number))
        if ip:
            await self._claim_ip(obj, ip, owner, dry_run=True)
        for i, number in ports:
            if number:
                await self._claim_port(obj, i, number, owner, dry_run=True)
        claimed_ips: set[str] = set()
        claimed_ports: set[str] = set()
        try:
            if ip is not None:
                spec["clusterIP"] = await self._claim_ip(obj, ip, owner, dry_run)
                claimed_ips.add(spec["clusterIP"])
            if needs_cluster_ip(spec):
                spec["clusterIPs"] = [spec["clusterIP"]]
            for i, number in ports:
                if number:
                    claimed = await self._claim_port(obj, i, number, owner, dry_run)
                    spec["ports"][i]["nodePort"] = int(claimed)
                    claimed_ports.add(claimed)
            claimed_ports.update(await self._claim_free_ports(spec, ports, owner, dry_run))
        except BaseException:
            if not dry_run:
                await self._release((claimed_ips, claimed_ports))
            raise
        new_ips, new_ports = held_values(obj)

        async def finish(success: bool) -> None:
            if dry_run:
                return
            if success:
                await self._release((had_ips - new_ips, had_ports - new_ports))
            else:
                await self._release((claimed_ips, claimed_ports))

        return finish

    async def _claim_ip(self, obj: Obj, ip: str, owner: Owner, dry_run: bool) -> str:
        if not ip:
            try:
                return await self.ips.claim_next(owner, dry_run=dry_run)
            except RangeFull:
                raise errors.internal("failed to allocate a serviceIP: range is full") from None
        if not self.ips.values.contains(ip):
            detail = (
                f"failed to allocate IP {ip}: the provided IP ({ip}) is not in the valid range. "
                f"The range of valid IPs is {self.ips.values}"
            )
            raise _refusal(obj, invalid_value("spec.clusterIPs", [ip], detail))
        try:
            await self.ips.claim(ip, owner, dry_run=dry_run)
        except KeyExists:
            detail = f"failed to allocate IP {ip}: provided IP is already allocated"
            raise _refusal(obj, invalid_value("spec.clusterIPs", [ip], detail)) from None
        return ip

    async def _claim_free_ports(
        self, spec: Obj, ports: list[tuple[int, str]], owner: Owner, dry_run: bool
    ) -> set[str]:
        """A node port for each port that names none, all claimed at once; as
        kube's, ports of one port number share theirs."""
        by_number: dict[Any, list[int]] = {}
        for i, number in ports:
            if not number:
                by_number.setdefault(spec["ports"][i].get("port"), []).append(i)
        if not by_number:
            return set()
        try:
            claimed = await self.ports.claim_many(owner, len(by_number), dry_run=dry_run)
        except RangeFull:
            raise errors.internal("failed to allocate a nodePort: range is full") from None
        for indexes, value in zip(by_number.values(), claimed, strict=True):
            for i in indexes:
                spec["ports"][i]["nodePort"] = int(value)
        return set(claimed)

    async def _claim_port(
        self, obj: Obj, index: int, number: str, owner: Owner, dry_run: bool
    ) -> str:
        field = f"spec.ports[{index}].nodePort"
        if not self.ports.values.contains(number):
            detail = (
                "provided port is not in the valid range. The range of valid ports is "
                f"{self.ports.values}"
            )
            raise _refusal(obj, invalid_value(field, int(number), detail))
        try:
            await self.ports.claim(number, owner, dry_run=dry_run)
        except KeyExists:
            detail = "provided port is already allocated"
            raise _refusal(obj, invalid_value(field, int(number), detail)) from None
        return number

    async def _release(self, values: tuple[set[str], set[str]]) -> None:
        ips, ports = values
        for ip in ips:
            await self.ips.release(ip)
        for port in ports:
            await self.ports.release(port)


def held_values(obj: Obj | None) -> tuple[set[str], set[str]]:
    """The ClusterIP and NodePorts a Service holds."""
    spec = (obj or {}).get("spec") or {}
    ips = {spec["clusterIP"]} if needs_cluster_ip(spec) and spec.get("clusterIP") else set()
    ports = (
        {str(p["nodePort"]) for p in spec.get("ports") or [] if p.get("nodePort")}
        if needs_node_ports(spec)
        else set()
    )
    return ips, ports
