"""The storage contract (kube's storage.Interface) as a typing.Protocol.

Both the storage service (on etcd) and the cacher serve it over
strata.storage.v1.Storage; GrpcStorage is the client side of either. Values are
the protobuf envelopes themselves (Object, WatchEvent): they already are plain
values, and keeping them avoids a copy at every hop.

resourceVersion semantics follow kube: "" is a linearizable read, "0" any
state, N with match "" or NotOlderThan at least N, N with match Exact exactly N.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import Protocol

from strata.proto.storage.v1 import storage_pb2

Object = storage_pb2.Object
WatchEvent = storage_pb2.WatchEvent

NOT_OLDER_THAN = "NotOlderThan"
EXACT = "Exact"
MATCHES = ("", NOT_OLDER_THAN, EXACT)


@dataclass(frozen=True, kw_only=True)
class Predicate:
    """Label and field selectors in kube's syntax; empty selects everything.
    owned_or_deleting keeps only objects with ownerReferences or a
    deletionTimestamp (what the garbage collector acts on; no REST request can
    ask for it)."""

    label_selector: str = ""
    field_selector: str = ""
    owned_or_deleting: bool = False


EVERYTHING = Predicate()


@dataclass(frozen=True, kw_only=True)
class GetOptions:
    resource_version: str = ""
    resource_version_match: str = ""
    # A missing object comes back as an Object with an empty value.
    ignore_not_found: bool = False


@dataclass(frozen=True, kw_only=True)
class ListOptions:
    resource_version: str = ""
    resource_version_match: str = ""
    limit: int = 0
    continue_token: str = ""
    predicate: Predicate = dataclasses.field(default_factory=Predicate)


@dataclass(frozen=True, kw_only=True)
class ListResult:
    items: list[storage_pb2.Object]
    resource_version: int
    continue_token: str = ""
    remaining_item_count: int | None = None
    # The items serialized, when the implementation holds them so (the cacher):
    # the wire answer then uses these rather than serializing every item again.
    encoded: list[bytes] | None = None


@dataclass(frozen=True, kw_only=True)
class Preconditions:
    uid: str = ""
    resource_version: str = ""


@dataclass(frozen=True, kw_only=True)
class WatchOptions:
    resource_version: str = ""
    recursive: bool = True
    predicate: Predicate = dataclasses.field(default_factory=Predicate)
    # BOOKMARK events with the revision reached, while nothing else happens.
    progress_notify: bool = False
    # kube's sendInitialEvents. True: the state at the start as ADDED (at
    # resource_version or newer), then, with progress_notify, a BOOKMARK with
    # initial_events_end (a watch-list). False: no state; from "" or "0" the
    # watch starts at the current revision. None: the state only from "" or "0".
    send_initial_events: bool | None = None
    # How long the caller keeps the watch open (0: unknown); caches send a
    # last BOOKMARK shortly before then.
    timeout_seconds: float = 0.0
    # With progress_notify: how often progress is asked of etcd (0: the
    # implementation's own default).
    progress_interval_seconds: float = 0.0


class Storage(Protocol):
    async def create(
        self,
        key: str,
        value: bytes,
        *,
        ttl_seconds: int = 0,
        envelope: storage_pb2.Envelope | None = None,
    ) -> storage_pb2.Object:
        """Store value at key; KeyExists if something is there. A TTL expires it via a lease.

        With an envelope, value is final and stored as it is, undecoded
        (strata.storage.envelopes.final makes both); without one, storage
        decodes it and drops metadata.resourceVersion and puts it in kube's
        key order itself."""
        ...

    async def get(self, key: str, opts: GetOptions = GetOptions()) -> storage_pb2.Object:
        """The object at key; KeyNotFound if none (unless opts.ignore_not_found)."""
        ...

    async def list(self, prefix: str, opts: ListOptions = ListOptions()) -> ListResult:
        """Objects under prefix, every page of one list read at one revision."""
        ...

    async def update(
        self,
        key: str,
        value: bytes,
        *,
        expected_resource_version: int,
        ttl_seconds: int = 0,
        envelope: storage_pb2.Envelope | None = None,
    ) -> storage_pb2.Object:
        """Compare-and-swap: Conflict unless the stored object is at
        expected_resource_version. A TTL expires it that long from now; without
        one it stays. envelope as for create."""
        ...

    async def delete(
        self, key: str, *, preconditions: Preconditions | None = None
    ) -> storage_pb2.Object:
        """Remove the object; returns its last state at the delete revision."""
        ...

    def watch(
        self, key: str, opts: WatchOptions = WatchOptions()
    ) -> AsyncGenerator[storage_pb2.WatchEvent, None]:
        """Every change after opts.resource_version, in order, exactly once."""
        ...

    async def current_revision(self) -> int:
        """The newest revision storage has."""
        ...

    async def count(self, prefix: str) -> int:
        """How many objects are stored under prefix."""
        ...

    async def compact(self, revision: int) -> None:
        """Forget the history before revision."""
        ...

    async def request_progress(self) -> None:
        """Have every open watch with progress_notify send a BOOKMARK at the
        revision it has reached, soon (not at its next progress interval)."""
        ...
