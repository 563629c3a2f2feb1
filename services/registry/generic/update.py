"""An update's one conflict loop, as kube's GuaranteedUpdate with an
UpdatedObjectInfo: read the current object, build the new one from it, check
it, and write it if the object is still as read; on a conflict read again and
build again.

What is built is the caller's (`UpdatedObjectInfo.build`): a PUT's body put
over the current object's server-owned metadata, a status or finalize write's
part of the body (services/registry/generic/update_builds.py), a Scale's
replicas (services/registry/generic/scale.py), or a patch applied to the
current object. What is checked is the Store's (`Admit`,
services/registry/generic/update_checks.py: types, the strategy, managed
fields, write hooks).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import orjson

from services.registry.generic import offload
from services.registry.generic.codec import Codec
from services.registry.generic.deletion import delete_if_finalized
from services.registry.generic.storage_errors import interpreted
from services.registry.generic.strategy import Finish
from strata.api.versions import parse_resource_version
from strata.proto.storage.v1 import storage_pb2
from strata.storage import Conflict, GetOptions, Storage, envelopes, guaranteed_update

Obj = dict[str, Any]
# The new object, made from the current one (at the version served; not to be
# changed): called again with the object read again after every conflict.
Build = Callable[[Obj], Obj]
# The checks of a built object against the current one, which may still change
# it (a strategy's PrepareForUpdate) and raise to refuse it; the Finish of what
# the write began beyond its own key, if it began anything. The third argument
# is the size of the objects in bytes (services/registry/generic/offload.py).
Admit = Callable[[Obj, Obj, int], Awaitable[Finish | None]]


@dataclass(frozen=True, kw_only=True)
class UpdatedObjectInfo:
    """What an update asks for (kube's rest.UpdatedObjectInfo): how to build the
    new object from the current one, and the resourceVersion the request was
    made at ("" for any: else a different current one is a Conflict)."""

    build: Build
    resource_version: str = ""
    # The bytes of the request's body, when it holds the whole new object.
    size: int = 0


async def update_loop(
    storage: Storage,
    codec: Codec,
    key: str,
    name: str,
    info: UpdatedObjectInfo,
    admit: Admit,
    *,
    ttl_seconds: int = 0,
    dry_run: bool = False,
) -> bytes:
    """The object as stored (at the storage version); with dry_run, what would
    have been stored, at the revision that stays. Storage errors are answered as
    Status."""
    resource = codec.resource
    # One Finish per try; only the last try's write can have landed.
    finishes: list[Finish] = []
    landed = -1

    async def attempt(current: storage_pb2.Object) -> bytes | envelopes.Final:
        if info.resource_version and info.resource_version != str(current.resource_version):
            raise Conflict(current.key, "stale resourceVersion")
        size = max(len(current.value), info.size)
        old = codec.loaded(current.value)
        new = await offload.run(size, info.build, old)
        finish = await admit(new, old, size)
        if finish is not None:
            finishes.append(finish)
        if new == old:
            return current.value  # the same bytes: guaranteed_update writes nothing
        if dry_run:  # answered, never stored: no size limit, no envelope
            return codec.answered(new)
        return codec.final(key, new)

    try:
        with interpreted(resource, name):
            if dry_run:
                current = await storage.get(key, GetOptions(resource_version=""))
                tried = await attempt(current)
                updated = orjson.loads(tried if isinstance(tried, bytes) else tried.value)
                # What a real update would answer, but at the revision that stays.
                updated["metadata"]["resourceVersion"] = str(current.resource_version)
                return codec.answered(updated)
            stored = await guaranteed_update(
                storage,
                key,
                attempt,
                ttl_seconds=ttl_seconds,
                expected_resource_version=_version(info.resource_version),
            )
            landed = len(finishes) - 1
            await delete_if_finalized(storage, resource, stored)
            return stored.value
    finally:
        for i, finish in enumerate(finishes):
            await finish(i == landed)


def _version(resource_version: str) -> int:
    """The revision a request's resourceVersion names (0 for none, or not one:
    such an update is refused as a conflict once the current object is read)."""
    try:
        return parse_resource_version(resource_version)
    except ValueError:
        return 0
