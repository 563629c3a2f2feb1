"""The storage service's lease reuse on a real etcd: writes asking for similar
TTLs share a lease, and no object outlives its TTL by more than the window."""

from __future__ import annotations

from services.storage.leases import LeaseManager
from strata.etcd import Etcd


async def test_similar_ttls_share_a_lease(etcd: Etcd) -> None:
    leases = LeaseManager(etcd)
    hour = await leases.lease_for(3600)
    assert await leases.lease_for(3600) == hour
    # 3590 s from now is still within the hour's lease, and the lease outlives
    # it by 70 s, more than 3590's window of 60 s: a lease of its own.
    assert await leases.lease_for(3590) != hour
    # A TTL far shorter cannot take a lease that long.
    assert await leases.lease_for(10) not in (0, hour)


async def test_a_lease_is_granted_for_the_ttl_and_its_window(etcd: Etcd) -> None:
    leases = LeaseManager(etcd)
    lease = await leases.lease_for(1000)
    # 5% of 1000 s is a window of 50 s.
    assert (await etcd.lease_time_to_live(lease)).grantedTTL == 1050
