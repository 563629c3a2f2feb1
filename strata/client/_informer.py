"""client-go's SharedIndexInformer and SharedInformerFactory on asyncio.

One informer runs one reflector (one list and one watch) for a resource and
feeds its DeltaFIFO; popping the deltas keeps the indexer up to date and tells
every registered handler, each through a queue of its own so that a slow
handler delays only itself and sees every notification in order. A handler
added after the start is first told of every object the informer holds (as
adds in the initial list). A handler's resync period makes the informer
re-deliver every object to it as an update (old and new the same) that often.
The factory hands out one informer per resource and namespace and starts them
together."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from strata.client._delta_fifo import Delta, DeltaFIFO, DeltaType, FIFOClosed
from strata.client._dynamic import DynamicClient, Resource
from strata.client._indexer import DeletedFinalStateUnknown, Indexer, IndexFunc, Lister
from strata.client._reflector import ListerWatcher, Reflector

log = logging.getLogger("strata.client.informer")
Obj = dict[str, Any]
Callback = Callable[..., Awaitable[None] | None]


@dataclass(kw_only=True)
class EventHandler:
    """What a handler wants told; each callback may be a function or a coroutine
    function. on_delete may get a DeletedFinalStateUnknown."""

    on_add: Callable[[Obj, bool], Awaitable[None] | None] | None = None
    on_update: Callable[[Obj, Obj], Awaitable[None] | None] | None = None
    on_delete: Callable[[Obj | DeletedFinalStateUnknown], Awaitable[None] | None] | None = None


@dataclass
class _Listener:
    handler: EventHandler
    resync_period: float
    next_resync: float = 0.0
    queue: asyncio.Queue[tuple[str, tuple[Any, ...]]] = field(default_factory=asyncio.Queue)
    task: asyncio.Task[None] | None = None

    async def run(self) -> None:
        while True:
            kind, args = await self.queue.get()
            callback: Callback | None = getattr(self.handler, f"on_{kind}")
            if callback is None:
                continue
            try:
                result = callback(*args)
                if inspect.isawaitable(result):
                    await result
            except Exception:
                log.exception("event handler failed", extra={"event": kind})


def _resource_version(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


class SharedIndexInformer:
    """See the module docstring."""

    def __init__(
        self,
        client: ListerWatcher,
        *,
        namespace: str | None = None,
        label_selector: str = "",
        field_selector: str = "",
        resync_period: float = 0.0,
        indexers: Mapping[str, IndexFunc] | None = None,
        page_size: int = 500,
        use_watch_list: bool = False,
        resync_check_period: float = 1.0,
    ) -> None:
        self.client = client
        self.indexer = Indexer(indexers)
        self.fifo = DeltaFIFO(self.indexer)
        self.reflector = Reflector(
            client,
            self.fifo,
            namespace=namespace,
            label_selector=label_selector,
            field_selector=field_selector,
            page_size=page_size,
            use_watch_list=use_watch_list,
        )
        self.default_resync_period = resync_period
        self.resync_check_period = resync_check_period
        self._listeners: list[_Listener] = []
        self._syncing: set[int] = set()
        self._tasks: list[asyncio.Task[None]] = []

    @property
    def started(self) -> bool:
        return bool(self._tasks)

    def lister(self) -> Lister:
        return Lister(self.indexer, self.client.resource.resource)

    def add_indexers(self, indexers: Mapping[str, IndexFunc]) -> None:
        self.indexer.add_indexers(indexers)

    def add_event_handler(
        self, handler: EventHandler, resync_period: float | None = None
    ) -> EventHandler:
        period = self.default_resync_period if resync_period is None else resync_period
        listener = _Listener(handler, period, time.monotonic() + period)
        self._listeners.append(listener)
        if self.started:
            for obj in self.indexer.list():
                listener.queue.put_nowait(("add", (obj, True)))
            listener.task = asyncio.create_task(listener.run(), name="informer handler")
        return handler

    def remove_event_handler(self, handler: EventHandler) -> None:
        for listener in [x for x in self._listeners if x.handler is handler]:
            self._listeners.remove(listener)
            if listener.task is not None:
                listener.task.cancel()

    def has_synced(self) -> bool:
        """Whether the first list has been delivered to the store and handlers'
        queues (at once for an empty one)."""
        return self.fifo.synced.is_set()

    async def wait_for_cache_sync(self, seconds: float | None = None) -> bool:
        """Whether the first list has been delivered (False after seconds)."""
        try:
            await asyncio.wait_for(self.fifo.synced.wait(), seconds)
        except TimeoutError:
            return False
        return True

    def start(self) -> None:
        if self.started:
            return
        for listener in self._listeners:
            listener.task = asyncio.create_task(listener.run(), name="informer handler")
        self._tasks = [
            asyncio.create_task(self.reflector.run(), name="informer reflector"),
            asyncio.create_task(self._process(), name="informer processor"),
            asyncio.create_task(self._resync(), name="informer resync"),
        ]

    async def stop(self) -> None:
        self.fifo.close()
        tasks = [*self._tasks, *(x.task for x in self._listeners if x.task is not None)]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []

    def _notify(self, kind: str, args: tuple[Any, ...], sync: bool = False) -> None:
        for index, listener in enumerate(self._listeners):
            if not sync or index in self._syncing:
                listener.queue.put_nowait((kind, args))

    async def _handle(self, deltas: list[Delta]) -> None:
        initial = self.fifo.in_initial_list
        for delta in deltas:
            obj = delta.object
            if delta.type is DeltaType.DELETED:
                self.indexer.delete(obj)
                self._notify("delete", (obj,))
                continue
            assert isinstance(obj, dict)
            old = self.indexer.get(obj)
            if old is None:
                self.indexer.add(obj)
                self._notify("add", (obj, initial))
                continue
            self.indexer.update(obj)
            sync = delta.type is DeltaType.SYNC or (
                delta.type is DeltaType.REPLACED
                and _resource_version(old) == _resource_version(obj)
            )
            self._notify("update", (old, obj), sync=sync)

    async def _process(self) -> None:
        while True:
            try:
                await self.fifo.pop(self._handle)
            except FIFOClosed:
                return

    async def _resync(self) -> None:
        while True:
            await asyncio.sleep(self.resync_check_period)
            now = time.monotonic()
            self._syncing = {
                i
                for i, listener in enumerate(self._listeners)
                if listener.resync_period > 0 and now >= listener.next_resync
            }
            for i in self._syncing:
                listener = self._listeners[i]
                listener.next_resync = now + listener.resync_period
            if self._syncing and self.has_synced():
                self.fifo.resync()


class SharedInformerFactory:
    """One informer per resource (and namespace), started and synced together."""

    def __init__(
        self,
        client: DynamicClient,
        *,
        namespace: str | None = None,
        resync_period: float = 0.0,
        use_watch_list: bool = False,
    ) -> None:
        self.client = client
        self.namespace = namespace
        self.resync_period = resync_period
        self.use_watch_list = use_watch_list
        self._informers: dict[tuple[Resource, str | None], SharedIndexInformer] = {}

    def informer_for(
        self, resource: Resource, *, namespace: str | None = None
    ) -> SharedIndexInformer:
        scope = namespace if namespace is not None else self.namespace
        key = (resource, scope)
        if key not in self._informers:
            self._informers[key] = SharedIndexInformer(
                self.client.resource(resource),
                namespace=scope,
                resync_period=self.resync_period,
                use_watch_list=self.use_watch_list,
            )
        return self._informers[key]

    def start(self) -> None:
        for informer in self._informers.values():
            informer.start()

    async def wait_for_cache_sync(self, seconds: float | None = None) -> dict[Resource, bool]:
        keys = list(self._informers)
        results = await asyncio.gather(
            *(self._informers[k].wait_for_cache_sync(seconds) for k in keys)
        )
        return {k[0]: ok for k, ok in zip(keys, results, strict=True)}

    async def shutdown(self) -> None:
        await asyncio.gather(*(i.stop() for i in self._informers.values()))
