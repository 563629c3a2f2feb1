"""The ClusterIP and NodePort repair loop (kube's ipallocator and portallocator
controllers): allocations and Services are compared each round, and what does
not agree is fixed.

- An allocation no Service holds is leaked (its Service was removed behind the
  registry's back, or a registry died between claiming and storing). It is
  released once it has been seen leaked for LEAK_ROUNDS rounds in a row, so a
  create in flight, which claims before it stores, is never robbed.
- A Service holding a value with no allocation (written behind the registry's
  back) gets the allocation back, so the value is not handed out again.
- Two Services holding one value cannot both keep it; that is logged, as kube
  reports it, for an operator to resolve.
"""

from __future__ import annotations

from collections import Counter

import orjson

from services.registry.builtin.allocation import (
    Allocator,
    Owner,
    ServiceAllocations,
    held_values,
    owner_of,
)
from services.registry.builtin.resources import SERVICES
from services.registry.controllers import rounds
from strata import telemetry
from strata.storage import KeyExists, ListOptions, Storage

INTERVAL_SECONDS = 3.0
LEAK_ROUNDS = 3

log = telemetry.get_logger("strata.registry.repair")


class AllocationRepair:
    def __init__(
        self,
        storage: Storage,
        allocations: ServiceAllocations,
        interval: float = INTERVAL_SECONDS,
        leak_rounds: int = LEAK_ROUNDS,
    ) -> None:
        self._storage = storage
        self._allocations = allocations
        self._interval = interval
        self._leak_rounds = leak_rounds
        self._leaked: dict[str, Counter[str]] = {}

    async def run(self) -> None:
        await rounds.every(self._interval, "allocation repair", self.repair_once)

    async def repair_once(self) -> None:
        # Allocations before Services: a Service stored after the first read is
        # only ever seen as holding its values, never as missing them.
        allocated_ips = await self._allocations.ips.allocated()
        allocated_ports = await self._allocations.ports.allocated()
        listed = await self._storage.list(SERVICES.key_prefix(), ListOptions(resource_version=""))
        held_ips: dict[str, list[Owner]] = {}
        held_ports: dict[str, list[Owner]] = {}
        for item in listed.items:
            service = orjson.loads(item.value)
            owner = owner_of(service)
            ips, ports = held_values(service)
            for ip in ips:
                held_ips.setdefault(ip, []).append(owner)
            for port in ports:
                held_ports.setdefault(port, []).append(owner)
        await self._reconcile(self._allocations.ips, allocated_ips, held_ips)
        await self._reconcile(self._allocations.ports, allocated_ports, held_ports)

    async def _reconcile(
        self, allocator: Allocator, allocated: dict[str, Owner], held: dict[str, list[Owner]]
    ) -> None:
        leaked = self._leaked.setdefault(allocator.prefix, Counter())
        for value in list(leaked):
            if value not in allocated or value in held:
                del leaked[value]
        for value, owner in allocated.items():
            if value in held:
                continue
            leaked[value] += 1
            if leaked[value] >= self._leak_rounds:
                await allocator.release(value)
                del leaked[value]
                log.info(
                    "released a leaked allocation",
                    value=value,
                    kind=allocator.prefix.strip("/"),
                    service=f"{owner.namespace}/{owner.name}",
                )
        for value, owners in held.items():
            if len(owners) > 1:
                log.error(
                    "one value is held by several services",
                    value=value,
                    kind=allocator.prefix.strip("/"),
                    services=[f"{o.namespace}/{o.name}" for o in owners],
                )
            if value in allocated or not allocator.values.contains(value):
                continue
            try:
                await allocator.claim(value, owners[0])
            except KeyExists:
                continue  # claimed meanwhile
            log.warning(
                "restored a missing allocation",
                value=value,
                kind=allocator.prefix.strip("/"),
                service=f"{owners[0].namespace}/{owners[0].name}",
            )
