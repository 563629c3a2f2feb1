"""The CRD controllers (kube's apiextensions naming, establishing and finalizer
controllers), run by the leader:

- naming: a CRD's requested names are accepted unless another CRD of its group
  holds one of them (NamesAccepted), and a CRD whose names are accepted is
  Established, from which moment its resources are served;
- cleanup: a CRD being deleted loses its custom resources, each deleted as a
  client's delete would be, before its cleanup finalizer is removed.
"""

from __future__ import annotations

from typing import Any

import grpc
import orjson

from services.registry.controllers import rounds
from services.registry.controllers.informed import Informed
from services.registry.extensions import crds, custom
from services.registry.generic.store import Store
from strata import telemetry
from strata.api.errors import StatusError
from strata.storage import Storage

# How soon a round that left work for later runs again: a naming round whose
# write failed, a cleanup round waiting on custom resources held by finalizers.
NAMING_RETRY_SECONDS = 0.2
CLEANUP_RETRY_SECONDS = 0.5
Obj = dict[str, Any]

log = telemetry.get_logger("strata.registry.crds")


async def _write_status(store: Store, crd: Obj) -> Obj | None:
    """Write a CRD's status; the CRD as written, or None if it changed or went
    meanwhile (the next round looks again)."""
    try:
        name = crd["metadata"]["name"]
        written = await store.update("", name, orjson.dumps(crd), subresource="status")
    except StatusError as e:
        if e.reason in ("Conflict", "NotFound"):
            return None
        raise
    updated: Obj = orjson.loads(written)
    return updated


def _taken(name: str, accepted: str, used: set[str]) -> str:
    """kube's equalToAcceptedOrFresh: why name cannot be had, or ""."""
    if name == accepted or name not in used:
        return ""
    return f'"{name}" is already in use'


def accept_names(crd: Obj, others: list[Obj]) -> tuple[Obj, str, str]:
    """The names a CRD may have next to the other CRDs of its group, and the
    reason and message of its NamesAccepted condition ("" reason: all accepted)."""
    group = crds.spec(crd).get("group")
    resources: set[str] = set()
    kinds: set[str] = set()
    for other in others:
        if crds.spec(other).get("group") != group:
            continue
        names = (other.get("status") or {}).get("acceptedNames") or {}
        held = (names.get("plural"), names.get("singular"), *(names.get("shortNames") or ()))
        resources.update(n for n in held if n)
        kinds.update(n for n in (names.get("kind"), names.get("listKind")) if n)
    requested: Obj = crds.spec(crd).get("names") or {}
    accepted: Obj = (crd.get("status") or {}).get("acceptedNames") or {}
    names_now = dict(accepted)
    reason = message = ""

    def claim(field: str, used: set[str], conflict: str) -> None:
        nonlocal reason, message
        why = _taken(str(requested.get(field, "")), str(accepted.get(field, "")), used)
        if why:
            reason, message = conflict, why
        elif requested.get(field):
            names_now[field] = requested[field]

    # kube's order: the last conflict found is the one the condition names.
    claim("plural", resources, "PluralConflict")
    claim("singular", resources, "SingularConflict")
    short_names = list(requested.get("shortNames") or [])
    if short_names != list(accepted.get("shortNames") or []):
        ours = set(accepted.get("shortNames") or [])
        taken = [
            f'"{s}" is already in use' for s in short_names if s not in ours and s in resources
        ]
        if taken:
            reason, message = "ShortNamesConflict", "[" + ", ".join(taken) + "]"
        elif short_names:
            names_now["shortNames"] = short_names
        else:
            names_now.pop("shortNames", None)
    claim("kind", kinds, "KindConflict")
    claim("listKind", kinds, "ListKindConflict")
    if requested.get("categories"):
        names_now["categories"] = requested["categories"]
    else:
        names_now.pop("categories", None)
    return names_now, reason, message


class CRDNaming:
    def __init__(self, registry: grpc.aio.Channel, crds_store: Store) -> None:
        self._crds = crds_store
        self._informed = Informed(registry, crds_store.resource)

    async def run(self) -> None:
        try:
            await rounds.on_change(
                self._informed.changed, "crd naming", self.round_once, retry=NAMING_RETRY_SECONDS
            )
        finally:
            await self._informed.stop()

    async def round_once(self) -> bool:
        """One round over every CRD; it leaves nothing for later (a CRD whose
        status write met a change is looked at again when the informer brings
        that change), so True."""
        listed = await self._informed.objects()
        for i, crd in enumerate(listed):
            status = crd.get("status") or {}
            requested = crds.spec(crd).get("names") or {}
            if status.get("acceptedNames") == requested and crds.condition_true(
                crd, crds.ESTABLISHED
            ):
                continue
            others = listed[:i] + listed[i + 1 :]
            names, reason, message = accept_names(crd, others)
            crd.setdefault("status", {})["acceptedNames"] = names
            if not reason:
                crds.set_condition(
                    crd, crds.NAMES_ACCEPTED, "True", "NoConflicts", "no conflicts found"
                )
                if not crds.condition_true(crd, crds.ESTABLISHED):
                    crds.set_condition(
                        crd,
                        crds.ESTABLISHED,
                        "True",
                        "InitialNamesAccepted",
                        "the initial names have been accepted",
                    )
            else:
                crds.set_condition(crd, crds.NAMES_ACCEPTED, "False", reason, message)
                if not crds.condition_true(crd, crds.ESTABLISHED):
                    crds.set_condition(
                        crd, crds.ESTABLISHED, "False", "NotAccepted", "not all names are accepted"
                    )
            written = await _write_status(self._crds, crd)
            if written is not None:
                listed[i] = written  # the next CRD of the group sees these names taken
                log.info("crd names", crd=crd["metadata"]["name"], accepted=not reason)
        return True


class CRDCleanup:
    def __init__(self, registry: grpc.aio.Channel, crds_store: Store, storage: Storage) -> None:
        self._crds = crds_store
        self._informed = Informed(registry, crds_store.resource)
        self._storage = storage

    async def run(self) -> None:
        try:
            await rounds.on_change(
                self._informed.changed, "crd cleanup", self.round_once, retry=CLEANUP_RETRY_SECONDS
            )
        finally:
            await self._informed.stop()

    async def round_once(self) -> bool:
        """One round; whether every CRD being deleted is through (custom
        resources held back by finalizers of their own make the next round come
        after the retry interval: their deletion is not the CRD informer's to see)."""
        through = True
        for crd in await self._informed.objects():
            metadata = crd["metadata"]
            if metadata.get("deletionTimestamp") and crds.CLEANUP_FINALIZER in (
                metadata.get("finalizers") or []
            ):
                through = await self._clean_up(crd) and through
        return through

    async def _clean_up(self, crd: Obj) -> bool:
        """Whether crd's cleanup is done (its finalizer removed, or it changed
        meanwhile: the change brings the next round)."""
        name = crd["metadata"]["name"]
        resources = custom.resources_of(crd) if custom.served(crd) else []
        if resources:
            in_progress = crds.condition(crd, crds.TERMINATING) or {}
            if in_progress.get("reason") != "InstanceDeletionInProgress":
                crds.set_condition(
                    crd,
                    crds.TERMINATING,
                    "True",
                    "InstanceDeletionInProgress",
                    "CustomResource deletion is in progress",
                )
                if await _write_status(self._crds, crd) is None:
                    return True
            stored = next((r for r in resources if not r.storage_version), resources[0])
            if not await Store(stored, self._storage).empty():
                return False  # resources with finalizers of their own: look again soon
        await self._crds.remove_finalizer("", name, crds.CLEANUP_FINALIZER)
        log.info("custom resources deleted with their definition", crd=name)
        return True
