"""CachedObjects: one resource's current objects as its watch cache holds them,
and the lists read from them.

Objects are kept in key order, so a namespace is a range of keys; an index by
name serves metadata.name selectors. Each object is serialized once, when a
list or a watch's initial state first reads it, and a list's items and ADDED
events are then joins of those bytes. Kept apart from WatchCache, which keeps
it current and fans its changes out to watchers.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable

from strata.proto.storage.v1 import storage_pb2
from strata.storage import KeyNotFound, ListResult, continuation
from strata.storage.requests import Matcher

Object = storage_pb2.Object


class CachedObjects:
    def __init__(self) -> None:
        self._objects: dict[str, Object] = {}
        self._keys: list[str] = []  # the keys of _objects, sorted
        self._by_name: dict[str, set[str]] = {}
        # key -> its object serialized, once a list or a watch's initial state
        # read it: a list's items and ADDED events are then joins of these.
        self._encoded: dict[str, bytes] = {}

    def replace(self, items: Iterable[Object]) -> None:
        """Hold exactly items (a relist's)."""
        self._objects = {obj.key: obj for obj in items}
        self._keys = sorted(self._objects)
        self._by_name = {}
        for obj in self._objects.values():
            self._by_name.setdefault(obj.name, set()).add(obj.key)
        self._encoded.clear()

    def store(self, obj: Object) -> None:
        key = obj.key
        if key not in self._objects:
            bisect.insort(self._keys, key)
            self._by_name.setdefault(obj.name, set()).add(key)
        self._objects[key] = obj
        self._encoded.pop(key, None)

    def remove(self, key: str) -> None:
        obj = self._objects.pop(key, None)
        if obj is None:
            return
        del self._keys[bisect.bisect_left(self._keys, key)]
        names = self._by_name.get(obj.name)
        if names is not None:
            names.discard(key)
            if not names:
                del self._by_name[obj.name]
        self._encoded.pop(key, None)

    def find(self, key: str) -> Object | None:
        return self._objects.get(key)

    def get(self, key: str) -> Object:
        obj = self._objects.get(key)
        if obj is None:
            raise KeyNotFound(key)
        return obj

    def keys_under(self, prefix: str) -> list[str]:
        """The keys of the objects under prefix, in order."""
        first = bisect.bisect_left(self._keys, prefix)
        return self._keys[first : bisect.bisect_left(self._keys, prefix + "\U0010ffff", first)]

    def encoded(self, key: str, obj: Object) -> bytes:
        """obj (the object at key) serialized, once."""
        data = self._encoded.get(key)
        if data is None:
            data = self._encoded[key] = obj.SerializeToString()
        return data

    def read_list(self, prefix: str, matches: Matcher, limit: int, revision: int) -> ListResult:
        """The objects under prefix, at most limit of them, as a list at revision
        (the cache's), with a continue token storage accepts for the rest."""
        name = matches.fields.exact("metadata.name") if not matches.fields.empty else None
        if name is not None:
            keys = sorted(k for k in self._by_name.get(name, ()) if k.startswith(prefix))
        else:
            keys = self.keys_under(prefix)
        items: list[Object] = []
        encoded: list[bytes] = []
        objects = self._objects
        for examined, key in enumerate(keys, 1):
            obj = objects[key]
            if not matches(obj):
                continue
            items.append(obj)
            encoded.append(self.encoded(key, obj))
            if limit and len(items) == limit:
                remaining_keys = len(keys) - examined
                if remaining_keys == 0:
                    break
                token = continuation.encode(revision, key[len(prefix) :] + "\x00")
                remaining = remaining_keys if matches.everything else None
                return ListResult(
                    items=items,
                    resource_version=revision,
                    continue_token=token,
                    remaining_item_count=remaining,
                    encoded=encoded,
                )
        return ListResult(items=items, resource_version=revision, encoded=encoded)
