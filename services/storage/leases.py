"""etcd leases for objects with a TTL (kube's etcd3 leaseManager): one lease
serves every write asking for a similar TTL within a short window, instead of
one lease per write (events, written by the thousand, would otherwise keep
etcd busy granting and expiring leases).

A lease is granted for the TTL plus a reuse window (5% of the TTL, at most a
minute) and handed out again while it outlives the TTL asked for by no more
than that window, so an object expires between its TTL and its TTL plus the
window.
"""

from __future__ import annotations

import asyncio
import time

from strata.etcd import Etcd

REUSE_PERCENT = 0.05
MAX_REUSE_SECONDS = 60


class LeaseManager:
    def __init__(
        self,
        etcd: Etcd,
        reuse_percent: float = REUSE_PERCENT,
        max_reuse_seconds: int = MAX_REUSE_SECONDS,
    ) -> None:
        self._etcd = etcd
        self._reuse_percent = reuse_percent
        self._max_reuse = max_reuse_seconds
        self._lock = asyncio.Lock()
        self._lease = 0
        self._expires = 0.0

    async def lease_for(self, ttl_seconds: int) -> int:
        """A lease ID that expires no sooner than ttl_seconds from now."""
        reuse = min(int(self._reuse_percent * ttl_seconds), self._max_reuse)
        async with self._lock:
            now = time.monotonic()
            if now + ttl_seconds < self._expires <= now + ttl_seconds + reuse:
                return self._lease
            granted = ttl_seconds + reuse
            self._lease = await self._etcd.lease_grant(granted)
            self._expires = now + granted
            return self._lease
