"""The informer's store: objects by key ("namespace/name", or "name" for a
cluster-scoped object) with named indexes kept up to date on every change,
and the listers controllers read it through. As client-go's ThreadSafeStore
it may be read from any thread (a lock guards it); a namespace index is there
by default."""

from __future__ import annotations

import builtins
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from strata.api.selectors import parse_label_selector
from strata.client._errors import NotFound

Obj = dict[str, Any]
IndexFunc = Callable[[Obj], list[str]]
NAMESPACE_INDEX = "namespace"


@dataclass(frozen=True)
class DeletedFinalStateUnknown:
    """An object that vanished while the watch was down: its key and the last
    state the store had of it (client-go's cache.DeletedFinalStateUnknown)."""

    key: str
    obj: Obj


def object_key(obj: Obj | DeletedFinalStateUnknown) -> str:
    """client-go's MetaNamespaceKeyFunc (DeletionHandlingMetaNamespaceKeyFunc)."""
    if isinstance(obj, DeletedFinalStateUnknown):
        return obj.key
    metadata = obj.get("metadata") or {}
    name, namespace = str(metadata.get("name", "")), metadata.get("namespace")
    return f"{namespace}/{name}" if namespace else name


def namespace_index(obj: Obj) -> builtins.list[str]:
    return [str((obj.get("metadata") or {}).get("namespace") or "")]


class Indexer:
    """Objects by key, with indexes (see the module docstring)."""

    def __init__(self, indexers: Mapping[str, IndexFunc] | None = None) -> None:
        self._lock = threading.RLock()
        self._items: dict[str, Obj] = {}
        self._indexers: dict[str, IndexFunc] = {NAMESPACE_INDEX: namespace_index}
        self._indexers.update(indexers or {})
        # index name -> indexed value -> keys
        self._indices: dict[str, dict[str, set[str]]] = {n: {} for n in self._indexers}
        self.resource_version = ""

    # --- indexes ------------------------------------------------------------------

    def add_indexers(self, indexers: Mapping[str, IndexFunc]) -> None:
        """More indexes, built over what the store holds already."""
        with self._lock:
            for name, func in indexers.items():
                if name in self._indexers:
                    raise ValueError(f"indexer {name!r} already exists")
                self._indexers[name] = func
                self._indices[name] = {}
                for key, obj in self._items.items():
                    self._index(name, key, None, obj)

    def _index(self, name: str, key: str, old: Obj | None, new: Obj | None) -> None:
        func, index = self._indexers[name], self._indices[name]
        before = set(func(old)) if old is not None else set()
        after = set(func(new)) if new is not None else set()
        for value in before - after:
            keys = index.get(value)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del index[value]
        for value in after - before:
            index.setdefault(value, set()).add(key)

    def _reindex(self, key: str, old: Obj | None, new: Obj | None) -> None:
        for name in self._indexers:
            self._index(name, key, old, new)

    # --- writes (the informer's) ------------------------------------------------------

    def add(self, obj: Obj) -> None:
        self.update(obj)

    def update(self, obj: Obj) -> None:
        key = object_key(obj)
        with self._lock:
            old = self._items.get(key)
            self._items[key] = obj
            self._reindex(key, old, obj)

    def delete(self, obj: Obj | DeletedFinalStateUnknown) -> None:
        key = object_key(obj)
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._reindex(key, old, None)

    def replace(self, objs: Iterable[Obj], resource_version: str) -> None:
        with self._lock:
            self._items = {object_key(o): o for o in objs}
            self._indices = {name: {} for name in self._indexers}
            for key, obj in self._items.items():
                self._reindex(key, None, obj)
            self.resource_version = resource_version

    # --- reads ---------------------------------------------------------------------------

    def get_by_key(self, key: str) -> Obj | None:
        with self._lock:
            return self._items.get(key)

    def get(self, obj: Obj) -> Obj | None:
        return self.get_by_key(object_key(obj))

    def list(self) -> builtins.list[Obj]:
        with self._lock:
            return list(self._items.values())

    def list_keys(self) -> builtins.list[str]:
        with self._lock:
            return list(self._items)

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def _index_named(self, name: str) -> dict[str, set[str]]:
        if name not in self._indices:
            raise KeyError(f"index {name!r} does not exist")
        return self._indices[name]

    def index_keys(self, index_name: str, value: str) -> builtins.list[str]:
        """The keys of the objects index_name maps value to."""
        with self._lock:
            return sorted(self._index_named(index_name).get(value, ()))

    def by_index(self, index_name: str, value: str) -> builtins.list[Obj]:
        with self._lock:
            keys = self._index_named(index_name).get(value, ())
            return [self._items[k] for k in sorted(keys)]

    def index(self, index_name: str, obj: Obj) -> builtins.list[Obj]:
        """The objects sharing any of obj's values in index_name."""
        with self._lock:
            index = self._index_named(index_name)
            keys = set().union(*(index.get(v, set()) for v in self._indexers[index_name](obj)))
            return [self._items[k] for k in sorted(keys)]

    def list_index_func_values(self, index_name: str) -> builtins.list[str]:
        with self._lock:
            return sorted(self._index_named(index_name))


def _selected(objs: Iterable[Obj], selector: str) -> builtins.list[Obj]:
    if not selector:
        return list(objs)
    parsed = parse_label_selector(selector)
    return [o for o in objs if parsed.matches((o.get("metadata") or {}).get("labels") or {})]


class Lister:
    """Reads of one resource from an informer's indexer (client-go's listers)."""

    def __init__(self, indexer: Indexer, resource: str = "") -> None:
        self.indexer = indexer
        self.resource = resource

    def list(self, selector: str = "") -> builtins.list[Obj]:
        """Every object (matching a label selector)."""
        return _selected(self.indexer.list(), selector)

    def get(self, name: str) -> Obj:
        """A cluster-scoped object by name; NotFound as the API would say it."""
        found = self.indexer.get_by_key(name)
        if found is None:
            raise _not_found(self.resource, name)
        return found

    def namespaced(self, namespace: str) -> NamespaceLister:
        return NamespaceLister(self.indexer, self.resource, namespace)


class NamespaceLister:
    def __init__(self, indexer: Indexer, resource: str, namespace: str) -> None:
        self.indexer = indexer
        self.resource = resource
        self.namespace = namespace

    def list(self, selector: str = "") -> builtins.list[Obj]:
        return _selected(self.indexer.by_index(NAMESPACE_INDEX, self.namespace), selector)

    def get(self, name: str) -> Obj:
        found = self.indexer.get_by_key(f"{self.namespace}/{name}")
        if found is None:
            raise _not_found(self.resource, name)
        return found


def _not_found(resource: str, name: str) -> NotFound:
    return NotFound(
        code=404,
        reason="NotFound",
        message=f'{resource or "object"} "{name}" not found',
        details={"name": name, "kind": resource},
    )
