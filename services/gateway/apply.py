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
    Key,
    ListShapes,
    Obj,
    Path,
    changed,
    entries,
    entry,
    get,
    leaves,
    list_shapes,
    order,
    overlap,
    printed,
    to_fields_v1,
)


@functools.lru_cache(maxsize=256)
def shapes_for(kind_schema: bytes) -> ListShapes:
    """The list shapes of a kind whose schema (as the registry reports it, JSON)
    is kind_schema."""
    return list_shapes(orjson.loads(kind_schema) if kind_schema else None)


def _child(container: Any, element: Element, then: Element | None) -> Any:
    """The value element names in container, made (a map, a list for an item, a
    new item with its key fields) when it is not there yet."""
    if isinstance(element, str):
        child = container.get(element)
        wanted = dict if then is None or isinstance(then, str) else list
        if not isinstance(child, wanted):
            child = container[element] = wanted()
        return child
    found = get(container, (element,))
    if found is not MISSING:
        return found
    item: Any = dict(element.fields) if isinstance(element, Key) else element.value
    container.append(item)
    return item


def _set(obj: Obj, path: Path, value: Any) -> None:
    """Set path to value; an empty map merges into the map there (leaving it as
    it is); a list's item is made when missing."""
    container: Any = obj
    for depth, element in enumerate(path[:-1]):
        container = _child(container, element, path[depth + 1])
    last = path[-1]
    if not isinstance(last, str):
        _child(container, last, None)
        return
    if value == {} and isinstance(container.get(last), dict):
        return
    container[last] = copy.deepcopy(value)


def _drop(container: Any, element: Element) -> None:
    if isinstance(element, str):
        container.pop(element, None)
    elif isinstance(element, Key):
        container[:] = [item for item in container if not element.matches(item)]
    else:
        container[:] = [item for item in container if item != element.value]


def _remove(obj: Obj, path: Path, owned: set[Path]) -> None:
    """Delete path, then each map or list it leaves empty that nobody owns."""
    parents: list[Any] = [obj]
    for depth in range(len(path) - 1):
        child = get(parents[-1], path[depth : depth + 1])
        if not isinstance(child, dict | list):
            return
        parents.append(child)
    _drop(parents[-1], path[-1])
    for depth in range(len(path) - 1, 0, -1):
        if parents[depth] or path[:depth] in owned:
            return
        _drop(parents[depth - 1], path[depth - 1])


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
    for path in sorted(wanted, key=order):
        _set(current, path, get(applied, path))
    managers = entries(current)
    mine = next((e for e in managers if e.manager == manager and e.is_apply), None)
    others = [e for e in managers if e is not mine]
    # A conflict is a field another manager owns that this apply changes (owning
    # a list's item is owning that it is there, not the fields inside it).
    conflicts: list[tuple[Entry, Path]] = []
    for path in sorted(wanted, key=order):
        for other in others:
            for owned in sorted(other.fields, key=order):
                if not overlap(owned, path) or (
                    len(path) > len(owned) and not isinstance(owned[-1], str)
                ):
                    continue
                deeper = path if len(path) >= len(owned) else owned
                if changed(before, current, deeper) and (other, deeper) not in conflicts:
                    conflicts.append((other, deeper))
    if conflicts and not force:
        raise _conflict_error(conflicts)
    for other, path in conflicts:
        other.fields = {f for f in other.fields if not overlap(f, path)}
    owned_by_others: set[Path] = set().union(*(e.fields for e in others)) if others else set()
    for path in sorted((mine.fields if mine else set()) - wanted, key=len):
        # A field goes unless another manager owns it or something inside it;
        # an item's key fields go with the item, never without it.
        keyed = len(path) > 1 and isinstance(path[-2], Key) and path[-1] in dict(path[-2].fields)
        if not keyed and not any(o[: len(path)] == path for o in owned_by_others):
            _remove(current, path, owned_by_others | wanted)
    for field in ("apiVersion", "kind"):
        current[field] = applied[field]
    metadata = current.setdefault("metadata", {})
    for field in ("name", "namespace"):
        if field in applied["metadata"] and field not in metadata:
            metadata[field] = applied["metadata"][field]
    # A manager left owning nothing (this one included) has no entry.
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
