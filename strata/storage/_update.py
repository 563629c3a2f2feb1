"""guaranteed_update: the one read-modify-write retry loop (kube's
GuaranteedUpdate), done as compare-and-swap so it works on any Storage."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from strata.proto.storage.v1 import storage_pb2
from strata.storage._errors import Conflict
from strata.storage._interface import GetOptions, Storage

UpdateFn = Callable[[storage_pb2.Object], Awaitable[bytes]]


async def guaranteed_update(
    storage: Storage, key: str, fn: UpdateFn, *, max_attempts: int = 0
) -> storage_pb2.Object:
    """Apply fn to the current object and store the result, re-reading on Conflict.

    fn may raise to abort; max_attempts of 0 retries for as long as conflicts last.
    """
    attempt = 0
    current = await storage.get(key, GetOptions(resource_version=""))
    while True:
        attempt += 1
        value = await fn(current)
        try:
            return await storage.update(
                key, value, expected_resource_version=current.resource_version
            )
        except Conflict:
            if max_attempts and attempt >= max_attempts:
                raise
            current = await storage.get(key, GetOptions(resource_version=""))
