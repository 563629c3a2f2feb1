"""Server-side apply (PATCH application/apply-patch+yaml): an applied
configuration merged into the live object under its field manager's name, with
metadata.managedFields saying who owns which field, as kube's field manager
keeps them (fieldsType FieldsV1).

A manager owns the fields its last applied configuration set. Applying a value
different from the live one to a field another manager owns is a conflict
(409, kube's message listing the fields and managers) unless forced, which
takes the fields over. A field a manager applied before and leaves out now is
removed, unless another manager owns it or something inside it. Maps merge
field by field, and so do the lists the kind's schema declares map lists (item
by item, by their keys: containers by name) or sets (value by value); any
other list is one field, replaced whole.
"""

from __future__ import annotations

import copy
import functools
from typing import Any

import orjson

from strata.api import errors
from strata.api.errors import Cause, StatusError
from strata.api.managed_fields import (
    APPLY,
    ATOMIC,
    MISSING,
    Element,
    Entry,
    Finder,
    Key,
    ListShapes,
    Obj,
    Overlaps,
    Path,
    changed,
    entries,
    entry,
    leaves,
    list_shapes,
    order,
    printed,
    to_fields_v1,
)


@functools.lru_cache(maxsize=256)
def shapes_for(kind_schema: bytes) -> ListShapes:
    """The list shapes of a kind whose schema (as the registry reports it, JSON)
    is kind_schema."""
    return list_shapes(orjson.loads(kind_schema) if kind_schema else None)


def _child(current: Finder, container: Any, element: Element, then: Element | None) -> Any:
    """The value element names in container, made (a map, a list for an item, a
    new item with its key fields) when it is not there yet."""
    if isinstance(element, str):
        child = container.get(element)
        wanted = dict if then is None or isinstance(then, str) else list
        if not isinstance(child, wanted):
            child = container[element] = wanted()
        return child
    found = current.get_in(container, element)
    if found is not MISSING:
        return found
    item: Any = dict(element.fields) if isinstance(element, Key) else element.value
    current.appended(container, element, item)
    return item


def _set(current: Finder, path: Path, value: Any) -> None:
    """Set path to value in current's object; an empty map merges into the map
    there (leaving it as it is); a list's item is made when missing."""
    container: Any = current.obj
    for depth, element in enumerate(path[:-1]):
        container = _child(current, container, element, path[depth + 1])
    last = path[-1]
    if not isinstance(last, str):
        _child(current, container, last, None)
        return
    if value == {} and isinstance(container.get(last), dict):
        return
    container[last] = copy.deepcopy(value)


def _remove_all(obj: Obj, paths: list[Path], kept: set[Path]) -> None:
    """Delete each of paths (shortest first), then every map or list that leaves
    empty that nobody keeps. A list's items go in one pass per list."""
    finder = Finder(obj)
    drops: dict[int, tuple[list[Any], set[int]]] = {}
    parents: set[Path] = set()
    for path in paths:
        container = finder.get(path[:-1])
        last = path[-1]
        if isinstance(last, str):
            if isinstance(container, dict):
                container.pop(last, None)
        elif isinstance(container, list) and (item := finder.get(path)) is not MISSING:
            drops.setdefault(id(container), (container, set()))[1].add(id(item))
        parents.update(path[:i] for i in range(1, len(path)))
    for container, ids in drops.values():
        container[:] = [item for item in container if id(item) not in ids]
    finder = Finder(obj)
    for parent in sorted(parents, key=len, reverse=True):
        value = finder.get(parent)
        if parent in kept or not isinstance(value, dict | list) or value:
            continue
        holder = finder.get(parent[:-1])
        if isinstance(parent[-1], str) and isinstance(holder, dict):
            holder.pop(parent[-1], None)
        elif isinstance(holder, list):
            holder[:] = [item for item in holder if item is not value]


def _conflict_error(conflicts: list[tuple[Entry, Path]]) -> StatusError:
    causes = [
        Cause(
            reason="FieldManagerConflict",
            message=f"conflict with {owner.described()}",
            field=printed(path),
        )
        for owner, path in conflicts
    ]
    if len(conflicts) == 1:
        owner, path = conflicts[0]
        message = (
            f"Apply failed with 1 conflict: conflict with {owner.described()}: {printed(path)}"
        )
    else:
        by_manager: dict[str, list[Path]] = {}
        for owner, path in conflicts:
            by_manager.setdefault(owner.described(), []).append(path)
        lines = []
        for described in sorted(by_manager):
            lines.append(f"conflicts with {described}:")
            lines += [f"- {printed(path)}" for path in by_manager[described]]
        message = f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(lines)
    return errors.apply_conflict(message, causes)


def check_applied(applied: Any, name: str) -> Obj:
    """The applied configuration, refused (400) when it cannot be one."""
    if not isinstance(applied, dict):
        raise errors.bad_request("the applied configuration must be an object")
    for field in ("apiVersion", "kind"):
        if not applied.get(field):
            raise errors.bad_request(f"the applied configuration has no {field}")
    metadata = applied.get("metadata")
    if not isinstance(metadata, dict):
        raise errors.bad_request("the applied configuration has no metadata")
    if metadata.get("managedFields") is not None:
        raise errors.bad_request("metadata.managedFields must be nil")
    given = metadata.get("name", name)
    if given != name:
        raise errors.bad_request(
            f"the name of the object ({given}) does not match the name on the URL ({name})"
        )
    return applied


def apply(
    live: Obj | None,
    applied: Obj,
    *,
    manager: str,
    force: bool,
    api_version: str,
    shapes: ListShapes = ATOMIC,
) -> Obj:
    """The object applied makes of live (None: it does not exist yet), its
    managedFields updated; 409 on conflicts unless forced. shapes says which
    lists merge item by item (by default none: every list is atomic)."""
    wanted = leaves(applied, shapes)
    before: Obj = live if live is not None else {}
    current: Obj = copy.deepcopy(before)
    config, writing = Finder(applied), Finder(current)
    for path in sorted(wanted, key=order):
        _set(writing, path, config.get(path))
    managers = entries(current)
    mine = next((e for e in managers if e.manager == manager and e.is_apply), None)
    others = [e for e in managers if e is not mine]
    # A conflict is a field another manager owns that this apply changes (owning
    # a list's item is owning that it is there, not the fields inside it).
    old_values, new_values = Finder(before), Finder(current)
    conflicts: list[tuple[Entry, Path]] = []
    for other in others:
        found: set[Path] = set()
        below: dict[Path, list[Path]] = {}
        for owned in other.fields:
            for i in range(1, len(owned)):
                below.setdefault(owned[:i], []).append(owned)
        for path in wanted:
            # Owned fields holding path (an item's own fields excepted), and inside it.
            holders = [
                path[:i]
                for i in range(1, len(path) + 1)
                if path[:i] in other.fields and (i == len(path) or isinstance(path[i - 1], str))
            ]
            for deeper in [path for _ in holders[:1]] + below.get(path, []):
                if deeper not in found and changed(old_values, new_values, deeper):
                    found.add(deeper)
        conflicts += [(other, path) for path in sorted(found, key=order)]
    if conflicts and not force:
        raise _conflict_error(conflicts)
    for other in {id(e): e for e, _ in conflicts}.values():
        taken = Overlaps(p for e, p in conflicts if e is other)
        other.fields = {f for f in other.fields if not taken(f)}
    owned_by_others = Overlaps(f for e in others for f in e.fields)
    # A field goes unless another manager owns it or something inside it; an
    # item's key fields go with the item, never without it.
    gone = [
        path
        for path in sorted((mine.fields if mine else set()) - wanted, key=len)
        if not (len(path) > 1 and isinstance(path[-2], Key) and path[-1] in dict(path[-2].fields))
        and not owned_by_others.covers(path)
    ]
    _remove_all(current, gone, owned_by_others.paths | wanted)
    for field in ("apiVersion", "kind"):
        current[field] = applied[field]
    metadata = current.setdefault("metadata", {})
    for field in ("name", "namespace"):
        if field in applied["metadata"] and field not in metadata:
            metadata[field] = applied["metadata"][field]
    # A manager left owning nothing (this one included) has no entry; one whose
    # fields are what they were keeps its entry, time included, as kube's field
    # manager does: applying the same configuration again then writes nothing.
    if mine is not None and mine.fields == wanted and mine.raw.get("apiVersion") == api_version:
        own = [mine.raw]
    else:
        own = [entry(manager, APPLY, api_version, wanted)] if wanted else []
    forced = {id(e) for e, _ in conflicts}
    result: list[Obj] = []
    for other in managers:
        if other is mine:
            result += own
        elif other.fields:
            was_forced = id(other) in forced
            result.append(
                {**other.raw, "fieldsV1": to_fields_v1(other.fields)} if was_forced else other.raw
            )
    if mine is None:
        result += own
    metadata["managedFields"] = result
    return current
