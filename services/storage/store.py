"""EtcdStorage: the storage contract on etcd v3 (kube's etcd3 store).

Keys given to the contract are relative ("/configmaps/demo/a"); the configured
prefix ("/registry" by default) is put in front for etcd. An object's
resourceVersion is its mod_revision, a list's is the header revision of the
read (every page of one list is read at that revision), a delete's the
revision of the delete.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import AsyncGenerator, Callable

import grpc

from services.storage import metrics, objects
from services.storage.encryption import Transformers
from services.storage.etcd_calls import etcd_errors, guarded, put
from services.storage.leases import LeaseManager
from services.storage.reads import PointReads
from services.storage.sealing import Sealing
from strata.etcd import Etcd, prefix_end
from strata.proto.etcd.mvccpb import kv_pb2
from strata.proto.storage.v1 import storage_pb2
from strata.storage import (
    EXACT,
    Conflict,
    Expired,
    GetOptions,
    InvalidObject,
    KeyExists,
    KeyNotFound,
    ListOptions,
    ListResult,
    Preconditions,
    TooLargeResourceVersion,
    Unavailable,
    WatchOptions,
    check_preconditions,
    continuation,
    envelopes,
)
from strata.storage.requests import (
    Matcher,
    check_list,
    check_match,
    compile_predicate,
    ends_initial_events,
    revision,
    sends_initial_state,
    through,
)

Event = storage_pb2.WatchEvent
# How long a read "not older than N" waits for etcd to reach N (kube's cacher waits 3s).
DEFAULT_FUTURE_WAIT_SECONDS = 3.0
# How often an idle watch that asked for progress gets a BOOKMARK. Caches wait
# for these to prove they are fresh, so it must be well under their 3s wait.
DEFAULT_PROGRESS_INTERVAL_SECONDS = 1.0
# The most often a watcher may have etcd asked for progress.
MIN_PROGRESS_INTERVAL_SECONDS = 0.05
# Envelopes kept by (key, revision), so a value read or written lately is not
# decoded again.
ENVELOPE_CACHE_SIZE = 10000
# Keys read per etcd range while filtering a limited list (kube grows its batches to 10000).
MAX_BATCH = 10000
CONTINUE_EXPIRED = (
    "The provided continue parameter is too old to display a consistent list result. You can "
    "start a new list without the continue parameter, or use the continue token in this "
    "response to retrieve the remainder of the results. Continuing with the provided token "
    "results in an inconsistent list - objects that were created, modified, or deleted between "
    "the time the first chunk was returned and now may show up in the list."
)


class EtcdStorage:
    def __init__(
        self,
        etcd: Etcd,
        prefix: str = "/registry",
        *,
        future_wait_seconds: float = DEFAULT_FUTURE_WAIT_SECONDS,
        progress_interval_seconds: float = DEFAULT_PROGRESS_INTERVAL_SECONDS,
        transformers: Transformers | None = None,
        on_resource: Callable[[str], None] | None = None,
    ) -> None:
        self._etcd = etcd
        self._leases = LeaseManager(etcd)
        self._prefix = prefix.rstrip("/")
        self._sealing = Sealing(transformers)
        self._reads = PointReads(etcd)
        # (etcd key, revision) -> envelope. A key's value at a revision never
        # changes, so this holds what was written or read lately, never stale.
        # An OrderedDict: a dict emptied from the front finds its first entry by
        # scanning past every hole left there (tens of µs at this size).
        self._envelopes: OrderedDict[tuple[bytes, int], storage_pb2.Object] = OrderedDict()
        # Told of every key written or listed (the object counter learns resources so).
        self._on_resource = on_resource or (lambda _: None)
        self._future_wait = future_wait_seconds
        self._progress_interval = progress_interval_seconds

    def _etcd_key(self, key: str) -> bytes:
        if not key.startswith("/") or "/../" in key or key.endswith("/.."):
            raise InvalidObject(key, f"invalid key {key!r}")
        return (self._prefix + key).encode()

    def _key(self, etcd_key: bytes) -> str:
        return etcd_key.decode()[len(self._prefix) :]

    def _object(self, ekey: bytes, stored: bytes, at: int) -> storage_pb2.Object:
        """The envelope of the value stored at ekey as of revision at (its mod
        revision, or the delete revision for a deleted key's last state)."""
        cached = self._envelopes.get((ekey, at))
        if cached is not None:
            return cached
        return self._remember(ekey, at, self._decoded(ekey, stored, at))

    def _decoded(self, ekey: bytes, stored: bytes, at: int) -> storage_pb2.Object:
        key = self._key(ekey)
        plaintext, stale = self._sealing.opened(key, ekey, stored)
        obj = objects.from_etcd(key, plaintext, at)
        obj.stale = stale
        return obj

    def _remember(self, ekey: bytes, at: int, obj: storage_pb2.Object) -> storage_pb2.Object:
        envelopes = self._envelopes
        envelopes[(ekey, at)] = obj
        if len(envelopes) > ENVELOPE_CACHE_SIZE:
            envelopes.popitem(last=False)
        return obj

    # --- writes ----------------------------------------------------------------

    async def create(
        self,
        key: str,
        value: bytes,
        *,
        ttl_seconds: int = 0,
        envelope: storage_pb2.Envelope | None = None,
    ) -> storage_pb2.Object:
        ekey = self._etcd_key(key)
        written = objects.for_etcd(key, value, envelope)
        data = self._sealing.sealed(key, ekey, written.value)
        self._on_resource(key)
        with etcd_errors(key), metrics.etcd_request("create", key):
            lease = await self._leases.lease_for(ttl_seconds) if ttl_seconds > 0 else 0
            response = await self._etcd.txn(put(ekey, data, lease))
        if not response.succeeded:
            raise KeyExists(key)
        revision = response.header.revision
        return self._remember(ekey, revision, envelopes.answer(key, written, revision))

    async def update(
        self,
        key: str,
        value: bytes,
        *,
        expected_resource_version: int,
        ttl_seconds: int = 0,
        envelope: storage_pb2.Envelope | None = None,
    ) -> storage_pb2.Object:
        ekey = self._etcd_key(key)
        written = objects.for_etcd(key, value, envelope)
        with etcd_errors(key), metrics.etcd_request("update", key):
            lease = await self._leases.lease_for(ttl_seconds) if ttl_seconds > 0 else 0
            sealed = self._sealing.sealed(key, ekey, written.value)
            response = await self._etcd.txn(
                put(ekey, sealed, lease, unchanged_since=expected_resource_version)
            )
        if not response.succeeded:
            if not response.responses[0].response_range.kvs:
                raise KeyNotFound(key)
            raise Conflict(key, f"{key}: resourceVersion {expected_resource_version} is stale")
        revision = response.header.revision
        return self._remember(ekey, revision, envelopes.answer(key, written, revision))

    async def delete(
        self, key: str, *, preconditions: Preconditions | None = None
    ) -> storage_pb2.Object:
        ekey = self._etcd_key(key)
        with etcd_errors(key), metrics.etcd_request("delete", key):
            current = await self._etcd.range(ekey)
            while True:
                if not current.kvs:
                    raise KeyNotFound(key)
                kv = current.kvs[0]
                if preconditions is not None:
                    check_preconditions(
                        self._object(ekey, kv.value, kv.mod_revision), preconditions
                    )
                remove = guarded(ekey, unchanged_since=kv.mod_revision)
                remove.success.add().request_delete_range.key = ekey
                response = await self._etcd.txn(remove)
                if response.succeeded:
                    return self._object(ekey, kv.value, response.header.revision)
                current = response.responses[0].response_range

    # --- reads -----------------------------------------------------------------

    async def current_revision(self) -> int:
        with etcd_errors(""):
            response = await self._etcd.range(b"/", count_only=True)
        return response.header.revision

    async def _too_large(self, key: str, wanted: int) -> TooLargeResourceVersion:
        """kube's words for a read at a revision etcd has not reached."""
        current = await self.current_revision()
        return TooLargeResourceVersion(
            key, f"Too large resource version: {wanted}, current: {current}"
        )

    async def _not_older_than(self, key: str, minimum: int, read_revision: int) -> None:
        """Wait (briefly) until etcd has reached minimum, else TooLargeResourceVersion."""
        deadline = time.monotonic() + self._future_wait
        current = read_revision
        while current < minimum:
            if time.monotonic() >= deadline:
                raise TooLargeResourceVersion(
                    key, f"Too large resource version: {minimum}, current: {current}"
                )
            await asyncio.sleep(0.05)
            current = await self.current_revision()

    async def get(self, key: str, opts: GetOptions = GetOptions()) -> storage_pb2.Object:
        ekey = self._etcd_key(key)
        wanted = revision(key, opts.resource_version)
        check_match(key, opts.resource_version, opts.resource_version_match)
        exact = opts.resource_version_match == EXACT
        with etcd_errors(key, wanted), metrics.etcd_request("get", key):
            if exact:
                try:
                    response = await self._etcd.range(ekey, revision=wanted)
                except grpc.aio.AioRpcError as e:
                    if "future revision" not in (e.details() or ""):
                        raise
                    raise await self._too_large(key, wanted) from None
            else:
                response = await self._reads.range(ekey)
            if not exact and opts.resource_version != "0" and wanted > response.header.revision:
                await self._not_older_than(key, wanted, response.header.revision)
                response = await self._reads.range(ekey)
        if not response.kvs:
            if opts.ignore_not_found:
                return storage_pb2.Object(key=key, resource_version=response.header.revision)
            raise KeyNotFound(key)
        kv = response.kvs[0]
        return self._object(kv.key, kv.value, kv.mod_revision)

    async def count(self, prefix: str) -> int:
        start = self._etcd_key(prefix)
        with etcd_errors(prefix), metrics.etcd_request("count", prefix):
            response = await self._etcd.range(start, prefix_end(start), count_only=True)
        return response.count

    async def request_progress(self) -> None:
        self._etcd.request_progress()

    async def compact(self, revision: int) -> None:
        with etcd_errors("", revision):
            await self._etcd.compact(revision)

    async def list(self, prefix: str, opts: ListOptions = ListOptions()) -> ListResult:
        check_list(prefix, opts)
        self._on_resource(prefix)
        matches = compile_predicate(prefix, opts.predicate)
        base = self._etcd_key(prefix)
        end = prefix_end(base)
        serializable = False
        if opts.continue_token:
            at, start = continuation.decode(prefix, opts.continue_token)
            key_from = base + start.encode()
            at = 0 if at == continuation.LATEST else at
        else:
            key_from = base
            wanted = revision(prefix, opts.resource_version)
            at = wanted if opts.resource_version_match == EXACT else 0
            serializable = opts.resource_version == "0"
        try:
            result = await self._read_pages(
                prefix, key_from, end, at, opts.limit, matches, serializable
            )
        except TooLargeResourceVersion:
            raise await self._too_large(prefix, at) from None
        except Expired:
            if not opts.continue_token:
                raise
            _, start = continuation.decode(prefix, opts.continue_token)
            raise Expired(
                prefix, CONTINUE_EXPIRED, continuation.encode(continuation.LATEST, start)
            ) from None
        if not opts.continue_token and opts.resource_version_match != EXACT:
            wanted = revision(prefix, opts.resource_version)
            if opts.resource_version != "0" and wanted > result.resource_version:
                await self._not_older_than(prefix, wanted, result.resource_version)
                return await self.list(prefix, opts)
        return result

    async def _read_pages(
        self,
        prefix: str,
        key_from: bytes,
        end: bytes,
        at: int,
        limit: int,
        matches: Matcher,
        serializable: bool,
    ) -> ListResult:
        """Items from key_from at revision at (0 = newest), at most limit of them."""
        base_len = len(self._prefix) + len(prefix)
        items: list[storage_pb2.Object] = []
        batch = limit
        first_count: int | None = None
        everything = matches.everything
        envelopes = self._envelopes
        while True:
            with etcd_errors(prefix, at), metrics.etcd_request("list", prefix):
                response = await self._etcd.range(
                    key_from, end, revision=at, limit=batch, serializable=serializable
                )
            at = at or response.header.revision
            if first_count is None:
                first_count = response.count
            last_key = b""
            for index, kv in enumerate(response.kvs):
                # A cached envelope is found without reading the value: each
                # read of it copies the bytes.
                key, mod_revision = kv.key, kv.mod_revision
                obj = envelopes.get((key, mod_revision))
                if obj is None:
                    obj = self._remember(
                        key, mod_revision, self._decoded(key, kv.value, mod_revision)
                    )
                if everything or matches(obj):
                    items.append(obj)
                last_key = key
                if limit and len(items) == limit:
                    more = response.more or index + 1 < len(response.kvs)
                    if not more:
                        return ListResult(items=items, resource_version=at)
                    token = continuation.encode(at, key[base_len:].decode() + "\x00")
                    # Known only when nothing was filtered out: then this page is
                    # the first batch, and etcd counted the keys from its start.
                    remaining = None
                    if everything and first_count is not None:
                        remaining = first_count - len(items)
                    return ListResult(
                        items=items,
                        resource_version=at,
                        continue_token=token,
                        remaining_item_count=remaining,
                    )
            if not response.more or not limit:
                return ListResult(items=items, resource_version=at)
            key_from = last_key + b"\x00"
            batch = min(batch * 2, MAX_BATCH)

    # --- watch -----------------------------------------------------------------

    async def watch(
        self, key: str, opts: WatchOptions = WatchOptions()
    ) -> AsyncGenerator[storage_pb2.WatchEvent, None]:
        start = self._etcd_key(key)
        end = prefix_end(start) if opts.recursive else b""
        requested = revision(key, opts.resource_version)
        matches = compile_predicate(key, opts.predicate)
        since = requested
        interval = opts.progress_interval_seconds or self._progress_interval
        with etcd_errors(key, requested):
            if sends_initial_state(since, opts):
                # The current state as ADDED (for "" and "0", and for a watch-list,
                # whose resourceVersion means "not older than"), then every change.
                state = await self._etcd.range(start, end)
                if state.header.revision < requested:
                    raise TooLargeResourceVersion(
                        key,
                        f"Too large resource version: {requested}, "
                        f"current: {state.header.revision}",
                    )
                for kv in state.kvs:
                    obj = self._object(kv.key, kv.value, kv.mod_revision)
                    if matches(obj):
                        yield Event(type=Event.ADDED, object=obj, resource_version=kv.mod_revision)
                since = state.header.revision
                if ends_initial_events(opts):
                    yield Event(
                        type=Event.BOOKMARK, resource_version=since, initial_events_end=True
                    )
            elif since == 0:
                since = (await self._etcd.range(start, count_only=True)).header.revision
            async for response in self._etcd.watch(
                start,
                end,
                start_revision=since + 1,
                prev_kv=True,
                progress_interval=max(interval, MIN_PROGRESS_INTERVAL_SECONDS)
                if opts.progress_notify
                else 0,
            ):
                if response.compact_revision:
                    raise Expired(
                        key,
                        f"too old resource version: {requested} ({response.compact_revision})",
                    )
                if response.canceled:
                    raise Unavailable(key, f"etcd canceled the watch: {response.cancel_reason}")
                if not response.events:
                    if opts.progress_notify:
                        yield Event(type=Event.BOOKMARK, resource_version=response.header.revision)
                    continue
                for event in response.events:
                    converted = self._event(event, matches)
                    if converted is not None:
                        yield converted

    def _event(self, event: kv_pb2.Event, matches: Matcher) -> storage_pb2.WatchEvent | None:
        kv = event.kv
        at = kv.mod_revision

        def previous() -> storage_pb2.Object | None:
            if not event.HasField("prev_kv"):
                return None
            if event.type == kv_pb2.Event.DELETE:
                return self._object(kv.key, event.prev_kv.value, at)
            # The old state stamped with this revision: not what the key holds at
            # it, so it stays out of the cache.
            return self._decoded(kv.key, event.prev_kv.value, at)

        if event.type == kv_pb2.Event.DELETE:
            return through(matches, Event.DELETED, None, previous, at)
        current = self._object(kv.key, kv.value, at)
        if kv.create_revision == kv.mod_revision:
            return through(matches, Event.ADDED, current, lambda: None, at)
        return through(matches, Event.MODIFIED, current, previous, at)
