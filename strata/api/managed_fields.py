"""metadata.managedFields: which field manager owns which fields of an object,
as kube's field manager keeps them (FieldsV1 sets), and what an ordinary write
(operation Update) does to them. Server-side apply's own rules build on these
(services/registry/generic/patching/apply.py).

A field is a path from the object's root: field names, and for the items of a
list its schema declares a map (x-kubernetes-list-type: map, keyed by
x-kubernetes-list-map-keys: containers by name) or a set (finalizers) the item
itself, named by its key fields or its value, as FieldsV1's `k:{"name":"web"}`
and `v:"x"` name them. Any other list is atomic: one field, owned whole, and so
is a map its schema declares atomic (x-kubernetes-map-type: atomic: a label
selector). A null and an empty map are fields of their own too (what
structured-merge-diff's field sets hold); an empty map or set list is not.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from strata.api.meta import now_rfc3339
from strata.api.schemas import OBJECT_META

Obj = dict[str, Any]


@dataclass(frozen=True)
class Key:
    """A map list's item, by the values of its key fields (sorted by name)."""

    fields: tuple[tuple[str, Any], ...]
    # What an item that leaves a key field out has there (its schema default).
    defaults: tuple[tuple[str, Any], ...] = field(default=(), compare=False)

    def v1(self) -> str:
        return "k:" + orjson.dumps(dict(self.fields), option=orjson.OPT_SORT_KEYS).decode()

    def printed(self) -> str:
        return "[" + ",".join(f"{n}={orjson.dumps(v).decode()}" for n, v in self.fields) + "]"


@dataclass(frozen=True)
class Value:
    """A set list's item, by its value."""

    value: Any

    def v1(self) -> str:
        return "v:" + orjson.dumps(self.value).decode()

    def printed(self) -> str:
        return f"[={orjson.dumps(self.value).decode()}]"


Element = str | Key | Value
Path = tuple[Element, ...]
SchemaPath = tuple[str, ...]  # field names, "[]" for a list's items
APPLY, UPDATE = "Apply", "Update"
# Fields no manager owns: the object's identity and what the server keeps.
_IDENTITY: frozenset[Path] = frozenset(
    {
        ("apiVersion",),
        ("kind",),
        ("metadata", "name"),
        ("metadata", "namespace"),
        ("metadata", "uid"),
        ("metadata", "resourceVersion"),
        ("metadata", "generation"),
        ("metadata", "creationTimestamp"),
        ("metadata", "deletionTimestamp"),
        ("metadata", "deletionGracePeriodSeconds"),
        ("metadata", "selfLink"),
        ("metadata", "managedFields"),
    }
)
_SCALARS = (str, int, float, bool, type(None))


@dataclass(frozen=True)
class ListShapes:
    """A kind's map and set lists, by schema path (every other list is atomic),
    and its atomic maps (every other map merges key by key)."""

    maps: Mapping[SchemaPath, tuple[tuple[str, Any], ...]] = field(default_factory=dict)
    sets: frozenset[SchemaPath] = frozenset()
    atomic_maps: frozenset[SchemaPath] = frozenset()

    def keyed(self, at: SchemaPath) -> bool:
        """Whether the list at `at` merges item by item (a map or a set list)."""
        return at in self.maps or at in self.sets

    def items(self, at: SchemaPath, value: list[Any]) -> list[tuple[Key | Value, Any]] | None:
        """value's items with the elements naming them, or None where value is
        atomic (its schema says so, or its items cannot be told apart)."""
        named: list[tuple[Key | Value, Any]] = []
        if (keys := self.maps.get(at)) is not None:
            defaults = tuple((k, d) for k, d in keys if d is not None)
            for item in value:
                if not isinstance(item, dict):
                    return None
                values = ((k, item.get(k, d)) for k, d in keys)
                fields = tuple(sorted((k, v) for k, v in values if v is not None))
                if not fields or not all(isinstance(v, _SCALARS) for _, v in fields):
                    return None
                named.append((Key(fields, defaults), item))
        elif at in self.sets:
            if not all(isinstance(item, _SCALARS) for item in value):
                return None
            named = [(Value(item), item) for item in value]
        else:
            return None
        return named if len({element for element, _ in named}) == len(named) else None


ATOMIC = ListShapes()
_LIST_TYPE = "x-kubernetes-list-type"
_MAP_KEYS = "x-kubernetes-list-map-keys"
_MAP_TYPE = "x-kubernetes-map-type"


def _walk(
    schema: Any,
    at: SchemaPath,
    maps: dict[SchemaPath, Any],
    sets: set[SchemaPath],
    atomic: set[SchemaPath],
) -> None:
    if not isinstance(schema, dict):
        return
    if schema.get(_MAP_TYPE) == "atomic":
        atomic.add(at)
        return  # nothing inside an atomic map is a field of its own
    for name, child in (schema.get("properties") or {}).items():
        _walk(child, (*at, name), maps, sets, atomic)
    items = schema.get("items")
    if schema.get("type") == "array" and isinstance(items, dict):
        kind, keys = schema.get(_LIST_TYPE), schema.get(_MAP_KEYS)
        if kind == "map" and isinstance(keys, list) and keys:
            properties = items.get("properties") or {}
            maps[at] = tuple((str(k), (properties.get(k) or {}).get("default")) for k in keys)
        elif kind == "set":
            sets.add(at)
        _walk(items, (*at, "[]"), maps, sets, atomic)


# An ownerReference is one field, owned whole (kube's +structType=atomic, its
# OpenAPI's x-kubernetes-map-type: atomic, which strata.api.schemas leaves out).
_OBJECT_META_ATOMIC = (("metadata", "ownerReferences", "[]"),)


def list_shapes(kind_schema: Obj | None) -> ListShapes:
    """The list and map shapes a kind's schema declares (its metadata is ObjectMeta)."""
    schema = kind_schema or {}
    properties = {**(schema.get("properties") or {}), "metadata": OBJECT_META}
    maps: dict[SchemaPath, Any] = {}
    sets: set[SchemaPath] = set()
    atomic: set[SchemaPath] = set(_OBJECT_META_ATOMIC)
    _walk({**schema, "properties": properties}, (), maps, sets, atomic)
    return ListShapes(maps, frozenset(sets), frozenset(atomic))


def schema_path(path: Path) -> SchemaPath:
    """The schema path of a field: a list's items are "[]"."""
    return tuple(e if isinstance(e, str) else "[]" for e in path)


def order(path: Path) -> tuple[tuple[int, str], ...]:
    """A sort key for paths (their elements are of mixed types)."""
    return tuple((0, e) if isinstance(e, str) else (1, e.v1()) for e in path)


def printed(path: Path) -> str:
    """A path as kube's conflict messages print it (.spec.containers[name="a"].image)."""
    return "".join(f".{e}" if isinstance(e, str) else e.printed() for e in path)


def leaves(
    obj: Obj, shapes: ListShapes = ATOMIC, empty_lists: set[Path] | None = None
) -> set[Path]:
    """The fields a configuration sets: every value that is not a non-empty map
    merged key by key nor a map or set list, and every item of such a list. An
    empty map or set list sets nothing (empty_lists, when given, collects them)."""
    found: set[Path] = set()
    _leaves(obj, shapes, (), (), found, set() if empty_lists is None else empty_lists)
    return found


def _leaves(
    obj: Obj, shapes: ListShapes, prefix: Path, at: SchemaPath, found: set[Path], empty: set[Path]
) -> None:
    for name, value in obj.items():
        path, schema_at = (*prefix, name), (*at, name)
        if path in _IDENTITY or (not prefix and name == "status"):
            continue
        if isinstance(value, dict) and value and schema_at not in shapes.atomic_maps:
            _leaves(value, shapes, path, schema_at, found, empty)
        elif isinstance(value, list) and (named := shapes.items(schema_at, value)) is not None:
            if not named:
                empty.add(path)
            for element, item in named:
                found.add((*path, element))
                items_at = (*schema_at, "[]")
                if isinstance(item, dict) and items_at not in shapes.atomic_maps:
                    _leaves(item, shapes, (*path, element), items_at, found, empty)
        else:
            found.add(path)


def _v1(element: Element) -> str:
    return f"f:{element}" if isinstance(element, str) else element.v1()


def to_fields_v1(paths: Iterable[Path]) -> Obj:
    """A field set as managedFields' FieldsV1 ({"f:data": {"f:a": {}}}); "." marks
    a field owned itself that has owned fields inside (a list's item)."""
    tree: Obj = {}
    owned = set(paths)
    for path in sorted(owned, key=order):
        node = tree
        for depth, element in enumerate(path):
            node = node.setdefault(_v1(element), {})
            if depth < len(path) - 1 and path[: depth + 1] in owned:
                node["."] = {}
    return tree


def _element(key: str) -> Element | None:
    kind, _, rest = key.partition(":")
    if kind == "f":
        return rest
    try:
        parsed = orjson.loads(rest)
    except orjson.JSONDecodeError:
        return None
    if kind == "k" and isinstance(parsed, dict) and parsed:
        return Key(tuple(sorted(parsed.items())))
    if kind == "v" and isinstance(parsed, _SCALARS):
        return Value(parsed)
    return None


def from_fields_v1(tree: Any, prefix: Path = ()) -> set[Path]:
    """The fields a FieldsV1 tree names (the leaves; "." marks a node owned itself)."""
    found: set[Path] = set()
    if not isinstance(tree, dict):  # a client's nonsense owns nothing
        return found
    for key, child in tree.items():
        if key == ".":
            found.add(prefix)
            continue
        element = _element(key)
        if element is None:  # an item by index ("i:0"): its atomic list is owned
            found.add(prefix)
            continue
        path = (*prefix, element)
        found |= from_fields_v1(child, path) if isinstance(child, dict) and child else {path}
    return found


class Overlaps:
    """Which paths overlap (one a prefix of the other) any of a set of paths,
    each answered in the length of the path asked about, not the set's size."""

    def __init__(self, paths: Iterable[Path]) -> None:
        self.paths = set(paths)
        self._prefixes = {p[:i] for p in self.paths for i in range(1, len(p) + 1)}

    def __call__(self, path: Path) -> bool:
        return path in self._prefixes or any(path[:i] in self.paths for i in range(1, len(path)))

    def covers(self, path: Path) -> bool:
        """Whether path is one of the paths or holds one of them."""
        return path in self._prefixes


MISSING = object()


class Finder:
    """Values at paths in one object that does not change while it is asked:
    a list's items are indexed by key or value the first time a path goes
    through the list, so finding every item of a long list stays linear."""

    def __init__(self, obj: Any) -> None:
        self.obj = obj
        # By the list's id, with the list itself: held, no other list takes its id.
        self._indexes: dict[tuple[int, Any], tuple[list[Any], dict[Any, Any]]] = {}

    def _index(self, items: list[Any], element: Key | Value) -> dict[Any, Any]:
        names = tuple(n for n, _ in element.fields) if isinstance(element, Key) else None
        cache_key = (id(items), names)
        cached = self._indexes.get(cache_key)
        index = cached[1] if cached is not None else None
        if index is None:
            index = {}
            if isinstance(element, Key):
                defaults = dict(element.defaults)
                for item in items:
                    if isinstance(item, dict):
                        values = tuple((n, item.get(n, defaults.get(n))) for n in names or ())
                        with contextlib.suppress(TypeError):  # an unhashable value
                            index.setdefault(values, item)
            else:
                for item in items:
                    if isinstance(item, _SCALARS):
                        index.setdefault(item, item)
            self._indexes[cache_key] = (items, index)
        return index

    def appended(self, items: list[Any], element: Key | Value, item: Any) -> None:
        """Tell the finder item was appended to items as element names it."""
        items.append(item)
        names = tuple(n for n, _ in element.fields) if isinstance(element, Key) else None
        cached = self._indexes.get((id(items), names))
        if cached is not None:
            cached[1].setdefault(
                element.fields if isinstance(element, Key) else element.value, item
            )

    def get_in(self, items: list[Any], element: Key | Value) -> Any:
        """The item of items element names, or MISSING."""
        wanted = element.fields if isinstance(element, Key) else element.value
        return self._index(items, element).get(wanted, MISSING)

    def get(self, path: Path) -> Any:
        """The value at path (a list's item by its key or value), or MISSING."""
        obj = self.obj
        for element in path:
            if isinstance(element, str):
                if not isinstance(obj, dict) or element not in obj:
                    return MISSING
                obj = obj[element]
            elif not isinstance(obj, list):
                return MISSING
            else:
                obj = self.get_in(obj, element)
                if obj is MISSING:
                    return MISSING
        return obj


def changed(before: Finder, after: Finder, path: Path) -> bool:
    """Whether a write changed the field at path: its value, or for a list's
    item (whose fields are fields of their own) whether it is there."""
    if isinstance(path[-1], str):
        return bool(before.get(path) != after.get(path))
    return (before.get(path) is MISSING) != (after.get(path) is MISSING)


def added_or_modified(before: Finder, after: Finder, path: Path, shapes: ListShapes) -> bool:
    """Whether a write added the field at path or changed its value, as
    structured-merge-diff's comparison tells (what conflicts with the field's
    owner): a map merged key by key, a map or set list and a list's item are
    never modified themselves (their own fields and items are)."""
    old, new = before.get(path), after.get(path)
    if new is MISSING:
        return False
    if old is MISSING:
        return True
    if not isinstance(path[-1], str):
        return False
    at = schema_path(path)
    if isinstance(old, dict) and isinstance(new, dict):
        return at in shapes.atomic_maps and old != new
    if isinstance(old, list) and isinstance(new, list):
        keyed = shapes.items(at, old) is not None and shapes.items(at, new) is not None
        return not keyed and old != new
    return bool(old != new) or type(old) is not type(new)


def in_kubes_order(managed: list[Obj]) -> list[Obj]:
    """managedFields as kube writes them: by operation (Apply first), time (an
    entry without one first; RFC 3339 in UTC sorts as it reads), manager,
    apiVersion and subresource."""
    if len(managed) < 2:  # most objects: one manager, nothing to sort
        return list(managed)
    return sorted(
        managed,
        key=lambda raw: tuple(
            str(raw.get(name) or "")
            for name in ("operation", "time", "manager", "apiVersion", "subresource")
        ),
    )


@dataclass
class Entry:
    """One managedFields entry, its fields decoded."""

    raw: Obj
    fields: set[Path]

    @property
    def manager(self) -> str:
        return str(self.raw.get("manager", ""))

    @property
    def is_apply(self) -> bool:
        return self.raw.get("operation") == APPLY

    def described(self) -> str:
        """The manager as kube's conflict messages name it."""
        name = f'"{self.manager}"'
        if subresource := self.raw.get("subresource"):
            name += f' with subresource "{subresource}"'
        if self.raw.get("operation") == UPDATE:
            name += f" using {self.raw.get('apiVersion', '')}"
            if at := self.raw.get("time"):
                name += f" at {at}"
        return name


def entries(live: Obj) -> list[Entry]:
    managed = (live.get("metadata") or {}).get("managedFields") or []
    return [
        Entry(dict(raw), from_fields_v1(raw.get("fieldsV1") or {}))
        for raw in managed
        if isinstance(raw, dict)
    ]


def entry(manager: str, operation: str, api_version: str, fields: Iterable[Path]) -> Obj:
    return {
        "manager": manager,
        "operation": operation,
        "apiVersion": api_version,
        "time": now_rfc3339(),
        "fieldsType": "FieldsV1",
        "fieldsV1": to_fields_v1(fields),
    }


def record_update(
    old: Obj | None, new: Obj, manager: str, api_version: str, shapes: ListShapes = ATOMIC
) -> None:
    """new's managedFields after an ordinary write by manager: the fields it set
    or changed are its own (operation Update) and no one else's; fields it
    removed are no one's. Its entry's time moves only when it set or changed a
    field, so a write of the same object changes nothing. A write that leaves
    managedFields out keeps the old ones; without a manager (server-side apply,
    which keeps them itself, or the server's own writes) nothing else changes."""
    metadata = new.setdefault("metadata", {})
    if metadata.get("managedFields") is None:
        kept = ((old or {}).get("metadata") or {}).get("managedFields")
        if kept:
            metadata["managedFields"] = kept
        else:
            metadata.pop("managedFields", None)
    if not manager:
        return
    before: Obj = old or {}
    after = leaves(new, shapes)
    old_values, new_values = Finder(before), Finder(new)
    written = {p for p in after if changed(old_values, new_values, p)}
    removed = leaves(before, shapes) - after
    touched = Overlaps(written | removed)
    current = entries(new)
    mine = next(
        (
            e
            for e in current
            if e.manager == manager
            and not e.is_apply
            and e.raw.get("apiVersion") == api_version
            and not e.raw.get("subresource")
        ),
        None,
    )
    result: list[Obj] = []
    for e in current:
        if e is mine:
            continue
        kept_fields = {f for f in e.fields if not touched(f)}
        if kept_fields == e.fields:
            result.append(e.raw)
        elif kept_fields:
            result.append({**e.raw, "fieldsV1": to_fields_v1(kept_fields)})
    owned = ((mine.fields if mine else set()) - removed) | written
    if owned and (written or mine is None):
        result.append(entry(manager, UPDATE, api_version, owned))
    elif owned and mine is not None:
        # A write that set nothing leaves its manager's time where it was (kube's
        # managedFieldsUpdater stamps a time only when the operation took fields).
        same = owned == mine.fields
        result.append(mine.raw if same else {**mine.raw, "fieldsV1": to_fields_v1(owned)})
    if result:
        metadata["managedFields"] = in_kubes_order(result)
    else:
        metadata.pop("managedFields", None)
