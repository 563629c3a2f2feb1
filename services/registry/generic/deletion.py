"""Deletion, as kube's generic Store does it: DeleteOptions' garbage-collection
choices (propagationPolicy and the older orphanDependents) and the finalizers
they put on an object being deleted (deletionFinalizersForGarbageCollection:
`orphan` for Orphan, `foregroundDeletion` for Foreground, neither for
Background; the garbage collector acts on them), and the delete loop that
deletes an object or, while finalizers hold it, marks it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from services.registry.generic.declarations import Resource
from services.registry.generic.namespace_lifecycle import TERMINATING
from services.registry.generic.strategy import WriteHooks
from strata.api import errors, meta
from strata.api.causes import invalid_value, not_supported
from strata.proto.storage.v1 import storage_pb2
from strata.storage import (
    Conflict,
    GetOptions,
    KeyNotFound,
    Preconditions,
    Storage,
    check_preconditions,
    envelopes,
    guaranteed_update,
)

Obj = dict[str, Any]

FOREGROUND = "Foreground"
BACKGROUND = "Background"
ORPHAN = "Orphan"
POLICIES = (FOREGROUND, BACKGROUND, ORPHAN)
ORPHAN_FINALIZER = "orphan"
FOREGROUND_FINALIZER = "foregroundDeletion"


@dataclass(frozen=True)
class DeleteOptions:
    propagation_policy: str | None = None
    orphan_dependents: bool | None = None

    def check(self) -> None:
        """ValidateDeleteOptions: 422 DeleteOptions."""
        causes = []
        policy = self.propagation_policy
        if self.orphan_dependents is not None and policy is not None:
            detail = "orphanDependents and deletionPropagation cannot be both set"
            causes.append(invalid_value("propagationPolicy", policy, detail))
        if policy is not None and policy not in POLICIES:
            causes.append(not_supported("propagationPolicy", policy, (*POLICIES, "nil")))
        if causes:
            raise errors.invalid("DeleteOptions", "", causes, "meta.k8s.io")

    def _orphans(self, finalizers: list[str]) -> bool:
        if self.orphan_dependents is not None:
            return self.orphan_dependents
        if self.propagation_policy is not None:
            return self.propagation_policy == ORPHAN
        for finalizer in finalizers:  # a finalizer already there stands
            if finalizer in (ORPHAN_FINALIZER, FOREGROUND_FINALIZER):
                return finalizer == ORPHAN_FINALIZER
        return False  # every resource strata serves defaults to Background

    def _in_foreground(self, finalizers: list[str]) -> bool:
        if self.orphan_dependents is not None:
            return False
        if self.propagation_policy is not None:
            return self.propagation_policy == FOREGROUND
        return FOREGROUND_FINALIZER in finalizers

    def finalizers(self, finalizers: list[str]) -> list[str]:
        """An object's finalizers once this deletion's choices are applied."""
        return _applied(finalizers, self._orphans(finalizers), self._in_foreground(finalizers))

    def namespace_finalizers(self, finalizers: list[str]) -> list[str]:
        """A namespace's finalizers once this deletion's choices are applied, as
        kube's namespace registry does on the first delete: unlike the generic
        Store's, orphanDependents=false asks for foregroundDeletion."""
        if self.orphan_dependents is not None:
            orphan, foreground = self.orphan_dependents, not self.orphan_dependents
        elif self.propagation_policy is not None:
            orphan = self.propagation_policy == ORPHAN
            foreground = self.propagation_policy == FOREGROUND
        else:
            orphan = ORPHAN_FINALIZER in finalizers
            foreground = FOREGROUND_FINALIZER in finalizers
        return _applied(finalizers, orphan, foreground)


def _applied(finalizers: list[str], orphan: bool, foreground: bool) -> list[str]:
    """finalizers with exactly the garbage-collection ones asked for (finalizers
    itself when that changes nothing)."""
    kept = [f for f in finalizers if f not in (ORPHAN_FINALIZER, FOREGROUND_FINALIZER)]
    if orphan:
        kept.append(ORPHAN_FINALIZER)
    if foreground:
        kept.append(FOREGROUND_FINALIZER)
    return kept if set(kept) != set(finalizers) else finalizers


@dataclass(frozen=True, kw_only=True)
class Deletion:
    """A delete's answer (the object, or a Success Status) and whether the
    object went, rather than being only marked while finalizers hold it."""

    gone: bool
    body: bytes


def held(obj: Obj, resource: Resource) -> bool:
    """Whether finalizers hold obj's deletion back."""
    if obj.get("metadata", {}).get("finalizers"):
        return True
    return resource.spec_finalizers and bool((obj.get("spec") or {}).get("finalizers"))


def _deletion_finalizers(
    resource: Resource, options: DeleteOptions, finalizers: list[str], marking: bool
) -> list[str]:
    """The finalizers a deletion leaves an object with, before the resource's
    own (kube: the generic Store's garbage-collection finalizers; the namespace
    registry's, on its first delete only; none where the resource's
    garbage-collection policy is Unsupported, or, as a CRD's, its registry
    marks it without them)."""
    if resource.spec_finalizers:
        return options.namespace_finalizers(finalizers) if marking else finalizers
    if not resource.garbage_collected:
        return finalizers
    return options.finalizers(finalizers)


async def delete_if_finalized(
    storage: Storage, resource: Resource, stored: storage_pb2.Object
) -> None:
    """Delete an object whose last finalizer just went while it was being
    deleted. A write that came in between is an update that finishes the job."""
    obj = orjson.loads(stored.value)
    if obj.get("metadata", {}).get("deletionTimestamp") and not held(obj, resource):
        gone = Preconditions(resource_version=str(stored.resource_version))
        with contextlib.suppress(Conflict, KeyNotFound):
            await storage.delete(stored.key, preconditions=gone)


class Deleter:
    """A resource's deletions (kube's generic Store.Delete): an object is
    deleted, or, while finalizers hold it, marked with a deletionTimestamp, each
    decided on the state read and retried when a write came in between. Storage
    errors are left for the caller to interpret."""

    def __init__(
        self,
        resource: Resource,
        storage: Storage,
        answered: Callable[[Obj], bytes],
        *,
        ttl_seconds: int = 0,
        hooks: WriteHooks | None = None,
    ) -> None:
        self._resource = resource
        self._storage = storage
        # What a dry run answers for an object storage never saw.
        self._answered = answered
        self._ttl = ttl_seconds
        self._hooks = hooks

    async def delete(
        self,
        key: str,
        preconditions: Preconditions | None,
        dry_run: bool,
        options: DeleteOptions,
    ) -> tuple[bool, bytes]:
        """Whether the object went (else it is only marked), and its last state."""
        while True:  # until a write lands on the state it was decided on
            current = await self._storage.get(key, GetOptions(resource_version=""))
            if preconditions is not None:
                check_preconditions(current, preconditions)
            obj = orjson.loads(current.value)
            marking = not obj["metadata"].get("deletionTimestamp")
            changed = self._put_finalizers(obj, options, marking)
            if held(obj, self._resource):
                if not marking and not changed:
                    return False, current.value  # marked already: nothing more to do
                marked = await self._mark(key, current, obj, marking, dry_run)
                if marked is not None:
                    return False, marked
            else:
                deleted = await self._remove(key, current, dry_run)
                if deleted is not None:
                    return True, deleted

    def _put_finalizers(self, obj: Obj, options: DeleteOptions, marking: bool) -> bool:
        """Give obj the finalizers this deletion leaves it with; whether that
        changed them."""
        metadata = obj["metadata"]
        finalizers = metadata.get("finalizers") or []
        wanted = _deletion_finalizers(self._resource, options, finalizers, marking)
        own = self._resource.deletion_finalizer
        if own and marking and own not in wanted:
            wanted = [*wanted, own]
        if wanted != finalizers:
            metadata["finalizers"] = wanted
        return wanted != finalizers

    async def _mark(
        self, key: str, current: storage_pb2.Object, obj: Obj, marking: bool, dry_run: bool
    ) -> bytes | None:
        """obj marked for deletion, as stored (None when a write came in between)."""
        r = self._resource
        metadata = obj["metadata"]
        if marking and r.on_delete is not None:
            r.on_delete(obj)
        metadata.setdefault("deletionTimestamp", meta.now_rfc3339())
        if not (r.spec_finalizers or r.deletion_finalizer):
            # kube's namespace and CRD registries mark only the time.
            metadata.setdefault("deletionGracePeriodSeconds", 0)
        if r.spec_finalizers:
            obj.setdefault("status", {})["phase"] = TERMINATING
        if dry_run:
            return self._answered(obj)
        written = envelopes.final(key, obj)
        try:
            marked = await self._storage.update(
                key,
                written.value,
                expected_resource_version=current.resource_version,
                ttl_seconds=self._ttl,
                envelope=written.envelope,
            )
        except Conflict:
            return None
        return marked.value

    async def _remove(self, key: str, current: storage_pb2.Object, dry_run: bool) -> bytes | None:
        """The object deleted, as it was (None when a write came in between)."""
        if dry_run:
            return current.value
        try:
            same = Preconditions(resource_version=str(current.resource_version))
            deleted = await self._storage.delete(key, preconditions=same)
        except Conflict:
            return None
        if self._hooks is not None:
            await self._hooks.after_delete(orjson.loads(deleted.value))
        return deleted.value

    async def remove_finalizer(self, key: str, finalizer: str, *, spec: bool = False) -> None:
        """Take finalizer out of metadata.finalizers (spec.finalizers with spec),
        deleting the object if that was the last hold."""

        async def drop(current: storage_pb2.Object) -> envelopes.Final:
            obj = orjson.loads(current.value)
            holder = obj.setdefault("spec", {}) if spec else obj["metadata"]
            holder["finalizers"] = [f for f in holder.get("finalizers") or [] if f != finalizer]
            return envelopes.final(key, obj)

        stored = await guaranteed_update(self._storage, key, drop, ttl_seconds=self._ttl)
        await delete_if_finalized(self._storage, self._resource, stored)
