"""guaranteed_update: the one read-modify-write retry loop (kube's
GuaranteedUpdate), done as compare-and-swap so it works on any Storage; and the
delete preconditions every implementation (and a dry run) checks the same way."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from strata.proto.storage.v1 import storage_pb2
from strata.storage._errors import Conflict, KeyNotFound
from strata.storage._interface import GetOptions, Preconditions, Storage
from strata.storage.envelopes import Final, stamped

# fn's result: the new value, or the new value made final with its envelope
# (strata.storage.envelopes.final), which storage then stores undecoded.
UpdateFn = Callable[[storage_pb2.Object], Awaitable[bytes | Final]]
# A read of the object as it is now.
_LATEST = GetOptions(resource_version="")


async def guaranteed_update(
    storage: Storage,
    key: str,
    fn: UpdateFn,
    *,
    max_attempts: int = 0,
    ttl_seconds: int = 0,
    expected_resource_version: int = 0,
) -> storage_pb2.Object:
    """Apply fn to the current object and store the result (expiring after
    ttl_seconds, if given), re-reading on Conflict.

    fn may raise to abort; max_attempts of 0 retries for as long as conflicts last.
    An update that changes no byte is not written (as in kube): the object, and
    its resourceVersion, stay as they are, unless a TTL is to be refreshed or
    the value was read through a rotated encryption key (stale: written again,
    it is encrypted with the current one).

    expected_resource_version, when the caller knows the version it means to
    change: if a read at any revision (the cacher answers it from its cache)
    finds the object at exactly that version, the first try starts from it
    instead of a consistent read, as kube's cacher hands GuaranteedUpdate its
    cached object. A version's content never changes and the write's
    compare-and-swap still decides; a try that fails or changes nothing on that
    copy is judged again on a consistent read.
    """
    attempt = 0
    current = None
    if expected_resource_version:
        current = await _at_version(storage, key, expected_resource_version)
    confirmed = current is None  # whether current came from a consistent read
    if current is None:
        current = await storage.get(key, _LATEST)
    while True:
        attempt += 1
        try:
            value = await fn(current)
        except Exception:
            if confirmed:
                raise
            fresh = await storage.get(key, _LATEST)
            if fresh.resource_version == current.resource_version:
                raise
            current, confirmed = fresh, True
            continue
        if _unchanged(value, current) and not ttl_seconds:
            if not confirmed:
                # Only a consistent read says whether the stored value is stale.
                current, confirmed = await storage.get(key, _LATEST), True
                continue
            if not current.stale:
                return current
        envelope, data = (None, value) if isinstance(value, bytes) else value
        try:
            return await storage.update(
                key,
                data,
                expected_resource_version=current.resource_version,
                ttl_seconds=ttl_seconds,
                envelope=envelope,
            )
        except Conflict:
            if max_attempts and attempt >= max_attempts:
                raise
            current, confirmed = await storage.get(key, _LATEST), True


def _unchanged(value: bytes | Final, current: storage_pb2.Object) -> bool:
    """Whether value is current's value byte for byte (a final one once it is
    stamped with current's revision, as current's own value is)."""
    if isinstance(value, bytes):
        return value == current.value
    at = value.envelope.resource_version_at
    return stamped(value.value, at, current.resource_version) == current.value


async def _at_version(storage: Storage, key: str, version: int) -> storage_pb2.Object | None:
    """The object as a read at any revision has it, if that is version."""
    try:
        found = await storage.get(key, GetOptions(resource_version="0"))
    except KeyNotFound:
        return None
    return found if found.resource_version == version else None


def check_preconditions(current: storage_pb2.Object, pre: Preconditions) -> None:
    """Conflict, with kube's message, when current is not what pre names."""
    if pre.uid and pre.uid != current.uid:
        raise Conflict(
            current.key,
            f"Precondition failed: UID in precondition: {pre.uid}, "
            f"UID in object meta: {current.uid}",
        )
    if pre.resource_version and pre.resource_version != str(current.resource_version):
        raise Conflict(
            current.key,
            f"Precondition failed: ResourceVersion in precondition: {pre.resource_version}, "
            f"ResourceVersion in object meta: {current.resource_version}",
        )
