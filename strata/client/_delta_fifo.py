"""client-go's DeltaFIFO on asyncio: for each object key, the changes
(Deltas) not yet processed, in order; keys come out in the order they first
went in. A relist (replace) says Replaced for every listed object and Deleted,
with a DeletedFinalStateUnknown, for every object the store knew that the list
no longer has; consecutive deletions of one key collapse into one; pop hands a
key's deltas to a process function and puts them back if it fails; has_synced
is true once the first list has been added and popped."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from strata.client._indexer import DeletedFinalStateUnknown, Indexer, object_key

Obj = dict[str, Any]


class DeltaType(StrEnum):
    ADDED = "Added"
    UPDATED = "Updated"
    DELETED = "Deleted"
    REPLACED = "Replaced"
    SYNC = "Sync"


@dataclass(frozen=True)
class Delta:
    type: DeltaType
    object: Obj | DeletedFinalStateUnknown


class FIFOClosed(Exception):
    """pop on a DeltaFIFO that was closed and is empty."""


class DeltaFIFO:
    """See the module docstring. known_objects is the informer's store, which
    tells a relist what has vanished and a resync what to resync."""

    def __init__(self, known_objects: Indexer | None = None) -> None:
        self._items: dict[str, list[Delta]] = {}
        self._queue: list[str] = []
        self._known = known_objects
        self._populated = False
        self._initial_population = 0
        self._processing = False
        self.in_initial_list = False
        self._closed = False
        self._ready = asyncio.Event()
        # Set once has_synced() holds and what the first list brought is processed.
        self.synced = asyncio.Event()

    # --- adding ---------------------------------------------------------------------

    def _queue_action(self, kind: DeltaType, obj: Obj | DeletedFinalStateUnknown) -> None:
        key = object_key(obj)
        deltas = self._items.get(key, [])
        delta = Delta(kind, obj)
        if kind is DeltaType.DELETED and deltas and deltas[-1].type is DeltaType.DELETED:
            # Keep the one that knows the most: a real final state over an unknown one.
            if isinstance(deltas[-1].object, DeletedFinalStateUnknown):
                deltas[-1] = delta
            self._items[key] = deltas
            return
        if key not in self._items:
            self._queue.append(key)
        self._items[key] = [*deltas, delta]
        self._notify()

    def _notify(self) -> None:
        self._ready.set()
        if self._initial_population == 0 and self._populated and not self._processing:
            self.synced.set()

    def add(self, obj: Obj) -> None:
        self._populated = True
        self._queue_action(DeltaType.ADDED, obj)

    def update(self, obj: Obj) -> None:
        self._populated = True
        self._queue_action(DeltaType.UPDATED, obj)

    def delete(self, obj: Obj | DeletedFinalStateUnknown) -> None:
        self._populated = True
        key = object_key(obj)
        if self._known is not None:
            if self._known.get_by_key(key) is None and key not in self._items:
                return  # never seen, nothing to tell
        elif key not in self._items:
            return
        self._queue_action(DeltaType.DELETED, obj)

    def replace(self, objs: Iterable[Obj]) -> None:
        """A relist's result (see the module docstring)."""
        listed = list(objs)
        keys = set()
        for obj in listed:
            keys.add(object_key(obj))
            self._queue_action(DeltaType.REPLACED, obj)
        vanished = 0
        known = self._known.list_keys() if self._known is not None else []
        for key in known:
            if key in keys:
                continue
            last = self._known.get_by_key(key) if self._known is not None else None
            if last is not None:
                self._queue_action(DeltaType.DELETED, DeletedFinalStateUnknown(key, last))
                vanished += 1
        # Queued, not yet in the store, and not listed: gone too.
        for key in list(self._queue):
            if key in keys or key in known:
                continue
            deltas = self._items.get(key) or []
            newest = deltas[-1].object if deltas else None
            if isinstance(newest, dict):
                self._queue_action(DeltaType.DELETED, DeletedFinalStateUnknown(key, newest))
                vanished += 1
        if not self._populated:
            self._populated = True
            self._initial_population = len(listed) + vanished
        self._notify()

    def resync(self) -> None:
        """A Sync delta for every known object that has nothing queued."""
        if self._known is None:
            return
        for key in self._known.list_keys():
            obj = self._known.get_by_key(key)
            if obj is not None and key not in self._items:
                self._queue_action(DeltaType.SYNC, obj)

    # --- taking ----------------------------------------------------------------------

    def has_synced(self) -> bool:
        return self._populated and self._initial_population == 0

    def __len__(self) -> int:
        return len(self._queue)

    def close(self) -> None:
        self._closed = True
        self._notify()

    async def pop(self, process: Callable[[list[Delta]], Awaitable[None]]) -> None:
        """Wait for a key, hand its deltas to process; if process raises, the
        deltas go back (ahead of anything newer for that key) and it re-raises."""
        while not self._queue and not self._closed:
            self._ready.clear()
            await self._ready.wait()
        if not self._queue:
            raise FIFOClosed()
        key = self._queue.pop(0)
        deltas = self._items.pop(key)
        # Whether these deltas came with the first list (asked before counting them).
        self.in_initial_list = not self.has_synced()
        if self._initial_population > 0:
            self._initial_population -= 1
        self._processing = True
        try:
            await process(deltas)
        except Exception:
            newer = self._items.get(key, [])
            if key not in self._items:
                self._queue.insert(0, key)
            self._items[key] = [*deltas, *newer]
            raise
        finally:
            self._processing = False
            self._notify()
