"""JSON and merge patches applied as kube applies them, to any depth.

kube applies both with evanphx/json-patch, to the object as JSON, decoding
only what the patch reaches (its "lazy nodes"): the document itself and each
map on a patch's path are decoded and written back with their keys sorted,
the rest is written as it was. A patched object kube cannot decode is refused
with all of the patched JSON in the message, so the order is part of the
answer; `Patched.styles` keeps it, for `deep_json.encode`.

A merge patch also drops the nulls of a value it adds, in lists too
(pruneNulls), and keeps those of a list or scalar it puts over a map. Nothing
here recurses: a patch may nest 10,000 deep (Go's limit), and the values a
JSON patch adds are put in place without jsonpatch's deep copy."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import jsonpatch
import jsonpointer

from strata.api import deep_json
from strata.api.deep_json import Style

Obj = dict[str, Any]
# Values deeper than this are put in place by a JSON patch as they are (a
# deep copy is a recursion two frames a level).
SHARED_DEPTH = 50


@dataclass(frozen=True)
class Patched:
    """A patched object, and how kube writes its maps (by id; unnamed ones as
    they came)."""

    obj: Any
    styles: dict[int, Style] = field(default_factory=dict)


def _shell(value: Any) -> Any:
    return {} if isinstance(value, dict) else [] if isinstance(value, list) else value


def _pruned(value: Any, styles: dict[int, Style]) -> Any:
    """value without its nulls (a map's null values, a list's null items), all
    levels: evanphx's pruneNulls, which also decodes every map in it."""
    if not isinstance(value, dict | list):
        return value
    root = _shell(value)
    work = [(root, value)]
    while work:
        made, given = work.pop()
        items = given.items() if isinstance(given, dict) else enumerate(given)
        for key, item in items:
            if item is None:
                continue
            child = _shell(item)
            if isinstance(made, dict):
                made[key] = child
            else:
                made.append(child)
            if isinstance(item, dict | list):
                work.append((child, item))
    styles[id(root)] = Style.SORTED_TREE
    return root


def merge_patch(document: Obj, patch: Obj) -> Patched:
    """RFC 7386 as evanphx/json-patch's MergePatch applies it: maps merge,
    null deletes, a value added is put without its nulls, anything else
    replaces; document is left as it was."""
    styles: dict[int, Style] = {}
    result = dict(document)
    styles[id(result)] = Style.SORTED_MAP
    work: list[tuple[Obj, Obj]] = [(result, patch)]
    while work:
        target, changes = work.pop()
        for key, value in changes.items():
            current = target.get(key)
            if value is None:
                target.pop(key, None)
            elif isinstance(current, dict) and isinstance(value, dict):
                merged = target[key] = dict(current)
                styles[id(merged)] = Style.SORTED_MAP
                work.append((merged, value))
            elif isinstance(current, dict):  # a list or scalar over a map: as sent
                target[key] = value
                styles[id(value)] = Style.RAW_TREE
            else:
                target[key] = _pruned(value, styles)
        for value in target.values():  # what the patch left: as it was
            if isinstance(value, dict | list):
                styles.setdefault(id(value), Style.RAW_TREE)
    return Patched(result, styles)


class _SharedMap(dict[str, Any]):
    """A JSON patch's value too deep to copy: the request's own, put as it is."""

    def __deepcopy__(self, memo: dict[int, Any]) -> _SharedMap:
        return self


class _SharedList(list[Any]):
    """A JSON patch's list too deep to copy, put as it is."""

    def __deepcopy__(self, memo: dict[int, Any]) -> _SharedList:
        return self


def _share(operations: list[Any]) -> bool:
    """Wrap the operations' values too deep to copy; whether any was."""
    shared = False
    for operation in operations:
        if not isinstance(operation, dict):
            continue
        value = operation.get("value")
        if isinstance(value, dict | list) and deep_json.depth(value) > SHARED_DEPTH:
            operation["value"] = (
                _SharedMap(value) if isinstance(value, dict) else _SharedList(value)
            )
            shared = True
    return shared


def _unshared(value: Any) -> Any:
    """value with its shared maps and lists plain again."""
    if isinstance(value, _SharedMap | _SharedList):
        value = dict(value) if isinstance(value, dict) else list(value)
    work = [value]
    while work:
        node = work.pop()
        if not isinstance(node, dict | list):
            continue
        keys = node.keys() if isinstance(node, dict) else range(len(node))
        for key in keys:
            child = node[key]
            if isinstance(child, _SharedMap):
                child = node[key] = dict(child)
            elif isinstance(child, _SharedList):
                child = node[key] = list(child)
            work.append(child)
    return value


def _decoded_on_paths(obj: Any, operations: list[Any], styles: dict[int, Style]) -> None:
    """The maps evanphx decodes to reach each operation's path (and from):
    each one holding what a path names, in the patched object."""
    for operation in operations:
        for name in ("path", "from"):
            pointer = operation.get(name) if isinstance(operation, dict) else None
            if not isinstance(pointer, str):
                continue
            try:
                parts = jsonpointer.JsonPointer(pointer).parts
            except jsonpointer.JsonPointerException:
                continue
            node = obj
            for part in parts[:-1]:
                if isinstance(node, dict):
                    styles[id(node)] = Style.SORTED_MAP
                    node = node.get(part)
                elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                    node = node[int(part)]
                else:
                    break
            else:
                if isinstance(node, dict):  # the map the last part names a key of
                    styles[id(node)] = Style.SORTED_MAP


def json_patch(document: Obj, operations: list[Any]) -> Patched:
    """RFC 6902 by jsonpatch, document left as it was; values nested deeper
    than SHARED_DEPTH are put in place without a copy (a copy of one shares
    it). Raises what jsonpatch raises."""
    shared = _share(operations)
    patched = jsonpatch.JsonPatch(operations).apply(copy.deepcopy(document))
    if shared:
        patched = _unshared(patched)
    styles: dict[int, Style] = {}
    _decoded_on_paths(patched, operations, styles)
    return Patched(patched, styles)
