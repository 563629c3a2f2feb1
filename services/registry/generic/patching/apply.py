"""Server-side apply (PATCH application/apply-patch+yaml): an applied
configuration merged into the live object under its field manager's name, with
metadata.managedFields saying who owns which field, as kube's field manager
keeps them (fieldsType FieldsV1).

A manager owns the fields its last applied configuration set (an empty map and
a null are fields; an empty map or set list is not). Adding, or giving another
value to, a field another manager owns is a conflict (409, kube's message
listing the fields and managers) unless forced, which takes the fields over. A
field a manager applied before and leaves out now is removed, unless a manager
(this one, in what it applies now, included) owns it or something inside it.
Maps merge field by field (an empty map or a null applied to one leaves it as it
is), unless the schema declares them atomic, and so do the lists it declares map
lists (item by item, by their keys: containers by name) or sets (value by
value); any other list is one field, replaced whole. The merge is
structured-merge-diff's: what a built-in kind's Go types then make of the
object (empty maps left out, nulls as zero values) is the registry's part.
"""

from __future__ import annotations

import copy
from typing import Any

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
    added_or_modified,
    entries,
    entry,
    in_kubes_order,
    leaves,
    order,
    printed,
    schema_path,
    to_fields_v1,
)


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


def _set(current: Finder, path: Path, value: Any, shapes: ListShapes) -> None:
    """Merge the applied value at path into current's object, as
    structured-merge-diff merges: a list's item is made when missing; an empty
    map, or a null where a map merged key by key or a map or set list is, leaves
    what is there (its keys and items are merged, and here there are none);
    anything else is replaced."""
    container: Any = current.obj
    for depth, element in enumerate(path[:-1]):
        container = _child(current, container, element, path[depth + 1])
    last = path[-1]
    if not isinstance(last, str):
        _child(current, container, last, None)
        return
    there, at = container.get(last), schema_path(path)
    merges = (isinstance(there, dict) and at not in shapes.atomic_maps) or (
        isinstance(there, list) and shapes.items(at, there) is not None
    )
    if merges and (value is None or (value == {} and isinstance(there, dict))):
        return
    container[last] = copy.deepcopy(value)


def _set_empty_list(current: Finder, path: Path) -> None:
    """An empty map or set list applied where there is none is an empty list."""
    container: Any = current.obj
    for depth, element in enumerate(path[:-1]):
        container = _child(current, container, element, path[depth + 1])
    if not isinstance(container.get(path[-1]), list):
        container[path[-1]] = []


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
    empty_lists: set[Path] = set()
    wanted = leaves(applied, shapes, empty_lists)
    before: Obj = live if live is not None else {}
    current: Obj = copy.deepcopy(before)
    config, writing = Finder(applied), Finder(current)
    for path in sorted(wanted, key=order):
        _set(writing, path, config.get(path), shapes)
    for path in sorted(empty_lists, key=order):
        _set_empty_list(writing, path)
    managers = entries(current)
    mine = next((e for e in managers if e.manager == manager and e.is_apply), None)
    others = [e for e in managers if e is not mine]
    # A conflict is a field another manager owns that this apply adds or gives
    # another value (owning a list's item is owning that it is there, not the
    # fields inside it; owning an empty map is owning that it is there).
    old_values, new_values = Finder(before), Finder(current)
    conflicts = [
        (other, path)
        for other in others
        for path in sorted(other.fields, key=order)
        if added_or_modified(old_values, new_values, path, shapes)
    ]
    if conflicts and not force:
        raise _conflict_error(conflicts)
    for other in {id(e): e for e, _ in conflicts}.values():
        other.fields -= {p for e, p in conflicts if e is other}
    # A field this manager applied before and leaves out now goes, unless a
    # manager (this one, now, included) owns it or something inside it: the
    # map it applied empty before is the map it applies keys of now. An item's
    # key fields go with the item, never without it.
    kept = Overlaps([f for e in others for f in e.fields] + list(wanted))
    gone = [
        path
        for path in sorted((mine.fields if mine else set()) - wanted, key=len)
        if not (len(path) > 1 and isinstance(path[-2], Key) and path[-1] in dict(path[-2].fields))
        and not kept.covers(path)
    ]
    _remove_all(current, gone, kept.paths)
    for field in ("apiVersion", "kind"):
        current[field] = applied[field]
    metadata = current.setdefault("metadata", {})
    for field in ("name", "namespace"):
        if field in applied["metadata"] and field not in metadata:
            metadata[field] = applied["metadata"][field]
    own = _own_entry(mine, wanted, manager, api_version, _changed(before, current))
    forced = {id(e) for e, _ in conflicts}
    result: list[Obj] = list(own)
    for other in others:
        if other.fields:
            was_forced = id(other) in forced
            result.append(
                {**other.raw, "fieldsV1": to_fields_v1(other.fields)} if was_forced else other.raw
            )
    metadata["managedFields"] = in_kubes_order(result)
    return current


def _own_entry(
    mine: Entry | None, wanted: set[Path], manager: str, api_version: str, changed: bool
) -> list[Obj]:
    """The applier's managedFields entry (none when it owns nothing). As kube's
    field manager, an apply that changes the object stamps the entry with the
    time; one that does not keeps the entry's time, and a new entry then has
    none (kube's order puts it first). One whose fields and version are what
    they were keeps its entry whole: applying the same configuration again then
    writes nothing."""
    if not wanted:
        return []
    if (
        mine is not None
        and not changed
        and mine.fields == wanted
        and mine.raw.get("apiVersion") == api_version
    ):
        return [mine.raw]
    stamped = entry(manager, APPLY, api_version, wanted)
    if not changed:
        if mine is not None and mine.raw.get("time"):
            stamped["time"] = mine.raw["time"]
        else:
            del stamped["time"]
    return [stamped]


def _changed(before: Obj, after: Obj) -> bool:
    """Whether an apply changed the object (its managedFields aside)."""

    def content(obj: Obj) -> Obj:
        metadata = {k: v for k, v in (obj.get("metadata") or {}).items() if k != "managedFields"}
        return {**obj, "metadata": metadata}

    return not before or content(before) != content(after)
