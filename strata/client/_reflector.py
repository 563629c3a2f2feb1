"""client-go's Reflector: keep a store in step with one resource on the
server. It lists (in pages, every page at one resourceVersion) and replaces
the store's content, then watches from the list's resourceVersion, applying
each event and remembering the resourceVersion it reached; bookmarks are asked
for and move that resourceVersion on while nothing changes. A watch the server
ends (its timeout, randomised between 5 and 10 minutes as client-go does) or
that breaks resumes from the last resourceVersion; 410 Expired (the
resourceVersion was compacted or left the watch cache) means list again.
Failures wait an exponential backoff with jitter. In watch-list mode the
initial state arrives as the watch's first events (sendInitialEvents) up to
the bookmark marked k8s.io/initial-events-end, and a server that does not
support it is listed instead."""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import AsyncIterator, Callable
from typing import Any, Protocol

import aiohttp

from strata.client._dynamic import Resource, WatchEvent
from strata.client._errors import ApiError, Expired
from strata.client._rest import backoff

log = logging.getLogger("strata.client.reflector")
Obj = dict[str, Any]
INITIAL_EVENTS_END = "k8s.io/initial-events-end"
# client-go's watch timeouts: 5 minutes times a random factor in [1, 2).
MIN_WATCH_TIMEOUT_SECONDS = 300
# A watch that lasted this long resets the backoff.
HEALTHY_SECONDS = 60.0
# client-go's "very short watch": one that ended within this time without an
# event is taken as a failure and waits a backoff, so a server that ends every
# watch at once (a dependency away) is not asked again in a tight loop.
SHORT_WATCH_SECONDS = 1.0


class ListerWatcher(Protocol):
    """What a reflector lists and watches through: the REST ResourceClient, or
    RegistryResourceClient inside strata."""

    resource: Resource

    async def list(
        self,
        namespace: str | None = None,
        *,
        all_namespaces: bool = False,
        label_selector: str = "",
        field_selector: str = "",
        limit: int | None = None,
        continue_: str = "",
        resource_version: str = "",
        resource_version_match: str = "",
    ) -> Obj: ...

    def watch(
        self,
        namespace: str | None = None,
        *,
        all_namespaces: bool = False,
        resource_version: str = "",
        label_selector: str = "",
        field_selector: str = "",
        timeout_seconds: int | None = None,
        allow_watch_bookmarks: bool = False,
        send_initial_events: bool | None = None,
        resource_version_match: str = "",
    ) -> AsyncIterator[WatchEvent]: ...


class Store(Protocol):
    """What a reflector writes to (a DeltaFIFO, or an Indexer directly)."""

    def add(self, obj: Obj) -> None: ...
    def update(self, obj: Obj) -> None: ...
    def delete(self, obj: Obj) -> None: ...
    def replace(self, objs: list[Obj]) -> None: ...


def _rv(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


class Reflector:
    """See the module docstring."""

    def __init__(
        self,
        client: ListerWatcher,
        store: Store,
        *,
        namespace: str | None = None,
        label_selector: str = "",
        field_selector: str = "",
        page_size: int = 500,
        use_watch_list: bool = False,
        watch_timeout: Callable[[], int] | None = None,
        max_backoff: float = 30.0,
    ) -> None:
        self.client = client
        self.store = store
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.page_size = page_size
        self.use_watch_list = use_watch_list
        self.watch_timeout = watch_timeout or (
            lambda: int(MIN_WATCH_TIMEOUT_SECONDS * (1 + random.random()))
        )
        self.max_backoff = max_backoff
        self.last_sync_resource_version = ""
        # What happened, for whoever watches the reflector (tests, metrics).
        self.lists = 0
        self.watches = 0

    @property
    def _scope(self) -> dict[str, Any]:
        if self.namespace is None:
            return {"all_namespaces": True}
        return {"namespace": self.namespace}

    async def _list(self) -> None:
        """List in pages and replace the store's content."""
        items: list[Obj] = []
        token, resource_version = "", ""
        while True:
            try:
                page = await self.client.list(
                    **self._scope,
                    label_selector=self.label_selector,
                    field_selector=self.field_selector,
                    limit=self.page_size,
                    continue_=token,
                )
            except Expired:
                if not token:
                    raise
                # The list's revision was compacted while paging: start over whole.
                items, token = [], ""
                continue
            metadata = page.get("metadata") or {}
            resource_version = resource_version or str(metadata.get("resourceVersion") or "")
            items += page.get("items") or []
            token = str(metadata.get("continue") or "")
            if not token:
                break
        self.store.replace(items)
        self.last_sync_resource_version = resource_version
        self.lists += 1

    async def _watch(self, initial: bool) -> None:
        """One watch from the last resourceVersion, until the server ends it.
        initial: this is a watch-list, whose first events are the current state."""
        self.watches += 1
        began, received = time.monotonic(), 0
        collected: list[Obj] | None = [] if initial else None
        events = self.client.watch(
            **self._scope,
            resource_version=self.last_sync_resource_version,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            timeout_seconds=self.watch_timeout(),
            allow_watch_bookmarks=True,
            send_initial_events=True if initial else None,
            resource_version_match="NotOlderThan" if initial else "",
        )
        async for event in events:
            received += 1
            obj = event.object
            if collected is not None:
                if event.type == "ADDED":
                    collected.append(obj)
                elif event.type == "BOOKMARK":
                    annotations = (obj.get("metadata") or {}).get("annotations") or {}
                    if annotations.get(INITIAL_EVENTS_END) == "true":
                        self.store.replace(collected)
                        self.last_sync_resource_version = _rv(obj)
                        self.lists += 1
                        collected = None
                continue
            if event.type == "ADDED":
                self.store.add(obj)
            elif event.type == "MODIFIED":
                self.store.update(obj)
            elif event.type == "DELETED":
                self.store.delete(obj)
            elif event.type != "BOOKMARK":
                log.warning("unexpected watch event %s", event.type)
                continue
            self.last_sync_resource_version = _rv(obj) or self.last_sync_resource_version
        # A server that ends every watch at once (a dependency away) is not
        # one without watch-list: checked first, so it only waits a backoff.
        if not received and time.monotonic() - began < SHORT_WATCH_SECONDS:
            raise _ShortWatch(
                f"very short watch: {self.client.resource.resource}: Unexpected watch close"
                " - watch lasted less than a second and no items received"
            )
        if collected is not None:
            raise _WatchListUnsupported("the watch ended before its initial events did")

    async def run(self) -> None:
        """List and watch until cancelled (see the module docstring)."""
        attempt = 0
        need_list = True
        while True:
            started = time.monotonic()
            try:
                if need_list:
                    if self.use_watch_list:
                        try:
                            await self._watch(initial=True)
                            need_list = False
                            continue
                        except (_WatchListUnsupported, ApiError) as e:
                            if isinstance(e, ApiError) and e.code not in (400, 403, 422):
                                raise
                            log.info("watch-list is not served (%s); listing instead", e)
                            self.use_watch_list = False
                    await self._list()
                    need_list = False
                await self._watch(initial=False)
                if time.monotonic() - started > HEALTHY_SECONDS:
                    attempt = 0
            except Expired:
                # Too old: the resourceVersion is gone; only a new list will do.
                need_list = True
                continue
            except Exception as e:
                # Anything else (a broken connection, a refusal, even a bug in
                # a page's handling) waits a backoff and lists or watches again:
                # a reflector that stopped would leave its store silently stale.
                if time.monotonic() - started > HEALTHY_SECONDS:
                    attempt = 0
                delay = backoff(attempt, base=0.8, cap=self.max_backoff)
                attempt += 1
                expected = isinstance(
                    e, ApiError | aiohttp.ClientError | TimeoutError | OSError | _ShortWatch
                )
                log.log(
                    logging.INFO if expected else logging.ERROR,
                    "list/watch failed (%r); again in %.1fs",
                    e,
                    delay,
                    exc_info=not expected,
                )
                await asyncio.sleep(delay)


class _WatchListUnsupported(Exception):
    pass


class _ShortWatch(Exception):
    """A watch ended at once with nothing in it: waited out like a failure."""
