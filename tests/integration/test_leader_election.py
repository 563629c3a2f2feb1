"""Leader election through a Lease: registry Stores of the registry's own over
the storage service and its etcd, candidates on short timings; and the running
system's registry holding its Lease."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Callable

import aiohttp
import orjson
import pytest

from services.registry.builtin.resources import LEASES, NAMESPACES
from services.registry.controllers.leader import LEASE_NAMESPACE, LeaderElection, Timing
from services.registry.generic.options import Rendering
from services.registry.generic.store import Store
from strata.api.errors import StatusError
from strata.storage import GrpcStorage
from tests.support import hops

FAST = Timing(lease_duration=1.5, renew_deadline=1.0, retry_period=0.2)


class Candidate:
    """One replica: its own channel to storage, and whether its controllers run."""

    def __init__(self, storage_address: str, lease: str) -> None:
        self.channel = hops.dial(storage_address)
        self.storage = GrpcStorage(self.channel)
        self.leases = Store(LEASES, self.storage)
        self.election = LeaderElection(
            self.leases, lease, f"candidate-{uuid.uuid4().hex[:6]}", FAST
        )
        self.leading = asyncio.Event()
        self.stopped_leading = asyncio.Event()
        self.task: asyncio.Task[None] | None = None

    @property
    def running(self) -> bool:
        return self.leading.is_set() and not self.stopped_leading.is_set()

    async def _lead(self) -> None:
        self.leading.set()
        try:
            await asyncio.Event().wait()
        finally:
            self.stopped_leading.set()

    def start(self) -> None:
        self.task = asyncio.create_task(self.election.run(self._lead))

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.task
        await self.storage.close()
        await self.channel.close()


async def within(seconds: float, event: asyncio.Event) -> None:
    async with asyncio.timeout(seconds):
        await event.wait()


async def first_leader(group: list[Candidate]) -> Candidate:
    waits = {asyncio.create_task(c.leading.wait()): c for c in group}
    done, pending = await asyncio.wait(waits, timeout=10, return_when=asyncio.FIRST_COMPLETED)
    for task in pending:
        task.cancel()
    assert done, "nobody became leader"
    return waits[done.pop()]


@pytest.fixture
async def candidates(storage_address: str) -> AsyncIterator[Callable[[], Candidate]]:
    lease = f"lease-{uuid.uuid4().hex[:8]}"
    made: list[Candidate] = []
    channel = hops.dial(storage_address)
    storage = GrpcStorage(channel)
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": LEASE_NAMESPACE}}
    with contextlib.suppress(StatusError):
        await Store(NAMESPACES, storage).create("", orjson.dumps(body))
    await storage.close()
    await channel.close()

    def make() -> Candidate:
        candidate = Candidate(storage_address, lease)
        made.append(candidate)
        candidate.start()
        return candidate

    yield make
    for candidate in made:
        await candidate.stop()


async def lease_spec(candidate: Candidate) -> dict[str, object]:
    name = candidate.election._name
    lease = orjson.loads(await candidate.leases.get(LEASE_NAMESPACE, name, "", Rendering()))
    spec: dict[str, object] = lease["spec"]
    return spec


async def test_one_candidate_of_several_leads(candidates: Callable[[], Candidate]) -> None:
    group = [candidates() for _ in range(3)]
    await first_leader(group)
    # Several renewals later, still exactly one.
    await asyncio.sleep(FAST.lease_duration * 2)
    leaders = [c for c in group if c.running]
    assert len(leaders) == 1
    spec = await lease_spec(leaders[0])
    assert spec["holderIdentity"] == leaders[0].election.identity
    assert spec["leaseDurationSeconds"] == 2
    assert spec["leaseTransitions"] == 0


async def test_a_leader_that_stops_hands_over_at_once(
    candidates: Callable[[], Candidate],
) -> None:
    first = candidates()
    await within(10, first.leading)
    second = candidates()
    await asyncio.sleep(FAST.retry_period * 3)
    assert not second.leading.is_set()
    await first.stop()
    # Released, not expired: the successor needs a retry period, not a duration.
    await within(FAST.retry_period * 5, second.leading)
    spec = await lease_spec(second)
    assert spec["holderIdentity"] == second.election.identity
    assert spec["leaseTransitions"] == 1


async def test_a_cut_off_leader_stops_leading_and_is_succeeded(
    candidates: Callable[[], Candidate],
) -> None:
    first = candidates()
    await within(10, first.leading)
    second = candidates()
    # The leader can no longer reach storage: it neither renews nor releases.
    await first.channel.close()
    await within(FAST.renew_deadline + 3, first.stopped_leading)
    await within(FAST.lease_duration + 3, second.leading)
    assert (await lease_spec(second))["holderIdentity"] == second.election.identity


async def test_timings_must_nest() -> None:
    with pytest.raises(ValueError, match="lease duration > renew deadline"):
        Timing(lease_duration=10, renew_deadline=10, retry_period=2)


async def test_the_system_registry_holds_its_lease(http: aiohttp.ClientSession) -> None:
    path = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/strata-registry"
    async with http.get(path) as response:
        assert response.status == 200
        lease = await response.json()
    assert lease["spec"]["holderIdentity"]
    assert lease["spec"]["leaseDurationSeconds"] == 15
