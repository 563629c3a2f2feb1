"""Server-side apply (PATCH application/apply-patch+yaml): an applied
configuration merged into the live object under its field manager's name, with
metadata.managedFields saying who owns which field, as kube's field manager
keeps them (fieldsType FieldsV1).

A manager owns the fields its last applied configuration set. Applying a value
different from the live one to a field another manager owns is a conflict
(409, kube's message listing the fields and managers) unless forced, which
takes the fields over. A field a manager applied before and leaves out now is
removed, unless another manager owns it too. Maps merge field by field; a list
is one field, replaced whole (kube merges a list with merge keys item by item,
as the schemas declare them; strata's apply does not yet).
"""

from __future__ import annotations

import copy
from typing import Any

from strata.api import errors
from strata.api.errors import Cause, StatusError
from strata.api.managed_fields import (
    APPLY,
    Entry,
    Obj,
    Path,
    entries,
    entry,
    get,
    leaves,
    overlap,
    to_fields_v1,
)


def _set(obj: Obj, path: Path, value: Any) -> None:
    """Set path to value; an empty map merges into the map there (leaving it as it is)."""
    for name in path[:-1]:
        child = obj.get(name)
        if not isinstance(child, dict):
            child = obj[name] = {}
        obj = child
    if value == {} and isinstance(obj.get(path[-1]), dict):
        return
    obj[path[-1]] = copy.deepcopy(value)


def _remove(obj: Obj, path: Path, owned: set[Path]) -> None:
    """Delete path, then each parent it leaves empty that nobody owns."""
    parents = [obj]
    for name in path[:-1]:
        child = parents[-1].get(name)
        if not isinstance(child, dict):
            return
        parents.append(child)
    parents[-1].pop(path[-1], None)
    for depth in range(len(path) - 1, 0, -1):
        if parents[depth] or path[:depth] in owned:
            return
        del parents[depth - 1][path[depth - 1]]


def _printed(path: Path) -> str:
    return "".join(f".{name}" for name in path)


def _conflict_error(conflicts: list[tuple[Entry, Path]]) -> StatusError:
    causes = [
        Cause(
            reason="FieldManagerConflict",
            message=f"conflict with {owner.described()}",
            field=_printed(path),
        )
        for owner, path in conflicts
    ]
    if len(conflicts) == 1:
        owner, path = conflicts[0]
        message = (
            f"Apply failed with 1 conflict: conflict with {owner.described()}: {_printed(path)}"
        )
    else:
        by_manager: dict[str, list[Path]] = {}
        for owner, path in conflicts:
            by_manager.setdefault(owner.described(), []).append(path)
        lines = []
        for described in sorted(by_manager):
            lines.append(f"conflicts with {described}:")
            lines += [f"- {_printed(path)}" for path in by_manager[described]]
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


def apply(live: Obj | None, applied: Obj, *, manager: str, force: bool, api_version: str) -> Obj:
    """The object applied makes of live (None: it does not exist yet), its
    managedFields updated; 409 on conflicts unless forced."""
    wanted = leaves(applied)
    before: Obj = live if live is not None else {}
    current: Obj = copy.deepcopy(before)
    for path in wanted:
        _set(current, path, get(applied, path))
    managers = entries(current)
    mine = next((e for e in managers if e.manager == manager and e.is_apply), None)
    others = [e for e in managers if e is not mine]
    # A conflict is a field another manager owns that this apply changes.
    conflicts: list[tuple[Entry, Path]] = []
    for path in sorted(wanted):
        for other in others:
            for owned in sorted(other.fields):
                deeper = path if len(path) >= len(owned) else owned
                if overlap(owned, path) and get(before, deeper) != get(current, deeper):
                    conflicts.append((other, path))
                    break
    if conflicts and not force:
        raise _conflict_error(conflicts)
    for other, path in conflicts:
        other.fields = {f for f in other.fields if not overlap(f, path)}
    owned_by_others = set().union(*(e.fields for e in others)) if others else set()
    for path in sorted((mine.fields if mine else set()) - wanted, key=len, reverse=True):
        if path not in owned_by_others:
            _remove(current, path, owned_by_others | wanted)
    for field in ("apiVersion", "kind"):
        current[field] = applied[field]
    metadata = current.setdefault("metadata", {})
    for field in ("name", "namespace"):
        if field in applied["metadata"] and field not in metadata:
            metadata[field] = applied["metadata"][field]
    own = entry(manager, APPLY, api_version, wanted)
    forced = {id(e) for e, _ in conflicts}
    result: list[Obj] = []
    for other in managers:
        if other is mine:
            result.append(own)
        elif other.fields:
            changed = id(other) in forced
            result.append(
                {**other.raw, "fieldsV1": to_fields_v1(other.fields)} if changed else other.raw
            )
    if mine is None:
        result.append(own)
    metadata["managedFields"] = result
    return current
