"""Leader election through a coordination.k8s.io/v1 Lease (client-go's
leaderelection with a LeaseLock), so that of several registry replicas one runs
the controllers at a time.

A candidate takes the Lease when nobody holds it, or when the holder's record
has not changed for a whole lease duration as measured on the candidate's own
clock (so clocks that disagree between replicas do not matter). The leader
renews every retry period; if it cannot renew within the renew deadline it
stops leading and becomes a candidate again. A leader that stops cleanly gives
the Lease up, so a successor takes over at once instead of after a duration.
"""

from __future__ import annotations

import asyncio
import random
import socket
import time
import uuid
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

import orjson

from services.registry.generic.options import Rendering
from services.registry.generic.store import Store
from strata import telemetry
from strata.api import meta
from strata.api.errors import StatusError

LEASE_NAMESPACE = "kube-system"
# kube's defaults for its controller managers' --leader-elect-* flags.
LEASE_DURATION_SECONDS = 15.0
RENEW_DEADLINE_SECONDS = 10.0
RETRY_PERIOD_SECONDS = 2.0
# client-go's JitterFactor for the retry period.
_JITTER = 1.2

log = telemetry.get_logger("strata.registry.leader")


def default_identity() -> str:
    """client-go's usual identity: the host name and a unique suffix."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


@dataclass(frozen=True, kw_only=True)
class Timing:
    lease_duration: float = LEASE_DURATION_SECONDS
    renew_deadline: float = RENEW_DEADLINE_SECONDS
    retry_period: float = RETRY_PERIOD_SECONDS

    def __post_init__(self) -> None:
        if not self.lease_duration > self.renew_deadline > self.retry_period * _JITTER > 0:
            raise ValueError(
                "leader election needs lease duration > renew deadline > "
                f"{_JITTER} x retry period > 0"
            )


class LeaderElection:
    def __init__(
        self, leases: Store, name: str, identity: str, timing: Timing | None = None
    ) -> None:
        self._leases = leases
        self._name = name
        self.identity = identity
        self._timing = timing or Timing()
        self._observed: Any = None
        self._observed_at = 0.0

    async def run(self, lead: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """Lead (run lead until leadership is lost) whenever this candidate holds
        the Lease, for as long as it runs; cancelled, it gives the Lease up."""
        try:
            while True:
                await self._acquire()
                log.info("became leader", lease=self._name, identity=self.identity)
                leading = asyncio.create_task(lead(), name=f"leading {self._name}")
                try:
                    await self._renew(leading)
                finally:
                    leading.cancel()
                    await asyncio.gather(leading, return_exceptions=True)
                log.warning("lost leadership", lease=self._name, identity=self.identity)
        except asyncio.CancelledError:
            await self._release()
            raise

    async def _acquire(self) -> None:
        while True:
            if await self._try_acquire_or_renew():
                return
            await asyncio.sleep(self._timing.retry_period * random.uniform(1, _JITTER))

    async def _renew(self, leading: asyncio.Task[None]) -> None:
        """Returns when the Lease could not be renewed within the deadline, or when
        lead ended by itself."""
        renewed = time.monotonic()
        while not leading.done():
            await asyncio.wait({leading}, timeout=self._timing.retry_period)
            if leading.done():
                break
            if await self._try_acquire_or_renew():
                renewed = time.monotonic()
            elif time.monotonic() - renewed >= self._timing.renew_deadline:
                return
        if not leading.cancelled() and (error := leading.exception()) is not None:
            log.error("leading ended with an error", lease=self._name, error=repr(error))

    async def _try_acquire_or_renew(self) -> bool:
        try:
            return await self._attempt()
        except Exception:  # a bug or a broken channel must not end the election
            log.exception("leader election attempt failed", lease=self._name)
            return False

    async def _attempt(self) -> bool:
        now = meta.now_micro()
        record = {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": max(1, round(self._timing.lease_duration)),
            "acquireTime": now,
            "renewTime": now,
            "leaseTransitions": 0,
        }
        try:
            lease = await self._read()
        except StatusError as e:
            if e.reason != "NotFound":
                log.warning("cannot read the lease", lease=self._name, error=e.message)
                return False
            return await self._write(None, record)
        spec = lease.get("spec") or {}
        if spec != self._observed:
            self._observed, self._observed_at = spec, time.monotonic()
        holder = spec.get("holderIdentity") or ""
        valid_until = self._observed_at + float(spec.get("leaseDurationSeconds") or 0)
        if holder and holder != self.identity and time.monotonic() < valid_until:
            return False  # held by another, who renewed within its duration
        transitions = int(spec.get("leaseTransitions") or 0)
        if holder == self.identity:
            record["acquireTime"] = spec.get("acquireTime") or now
            record["leaseTransitions"] = transitions
        else:
            record["leaseTransitions"] = transitions + 1
        return await self._write(lease, record)

    async def _read(self) -> dict[str, Any]:
        """The Lease as it is now (a consistent read)."""
        lease: dict[str, Any] = orjson.loads(
            await self._leases.get(LEASE_NAMESPACE, self._name, "", Rendering())
        )
        return lease

    async def _write(self, lease: dict[str, Any] | None, spec: dict[str, Any]) -> bool:
        """Create the Lease, or update the one read (at the revision read)."""
        try:
            if lease is None:
                body = {
                    "apiVersion": "coordination.k8s.io/v1",
                    "kind": "Lease",
                    "metadata": {"name": self._name, "namespace": LEASE_NAMESPACE},
                    "spec": spec,
                }
                written = await self._leases.create(LEASE_NAMESPACE, orjson.dumps(body))
            else:
                lease["spec"] = spec
                written = await self._leases.update(
                    LEASE_NAMESPACE, self._name, orjson.dumps(lease)
                )
        except StatusError as e:
            # Conflict and AlreadyExists: another candidate wrote first.
            if e.reason not in ("Conflict", "AlreadyExists"):
                log.warning("cannot write the lease", lease=self._name, error=e.message)
            return False
        self._observed = orjson.loads(written).get("spec") or {}
        self._observed_at = time.monotonic()
        return True

    async def _release(self) -> None:
        """Give the Lease up if held (client-go's ReleaseOnCancel)."""
        try:
            lease = await self._read()
            spec = lease.get("spec") or {}
            if spec.get("holderIdentity") != self.identity:
                return
            now = meta.now_micro()
            lease["spec"] = {
                "leaseDurationSeconds": 1,
                "acquireTime": now,
                "renewTime": now,
                "leaseTransitions": spec.get("leaseTransitions", 0),
            }
            await self._leases.update(LEASE_NAMESPACE, self._name, orjson.dumps(lease))
            log.info("released the lease", lease=self._name, identity=self.identity)
        except StatusError as e:
            log.warning("cannot release the lease", lease=self._name, error=e.message)
        except Exception:  # stopping anyway: the Lease then expires instead
            log.exception("cannot release the lease", lease=self._name)
