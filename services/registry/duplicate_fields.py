"""Fields a JSON request body gives twice: kube's strict decoder reports them
(`duplicate field "spec.paused"`) where a plain JSON parser keeps the last value
without a word. orjson is such a parser, so a body the request's fieldValidation
cares about is read a second time by the standard library's, whose
object_pairs_hook sees every key, duplicates included."""

from __future__ import annotations

import json
from typing import Any

from services.registry.schema import field_path


class _Twice(dict[str, Any]):
    """A JSON object that gave some of its keys twice."""

    __slots__ = ("keys_twice",)

    def __init__(self, pairs: list[tuple[str, Any]]) -> None:
        super().__init__(pairs)
        seen: set[str] = set()
        self.keys_twice: list[str] = []
        for key, _ in pairs:
            if key in seen and key not in self.keys_twice:
                self.keys_twice.append(key)
            seen.add(key)


def _paths(value: Any, path: str, found: list[str]) -> None:
    if isinstance(value, dict):
        if isinstance(value, _Twice):
            found.extend(field_path(path, key) for key in value.keys_twice)
        for key, item in value.items():
            _paths(item, field_path(path, key), found)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _paths(item, f"{path}[{i}]", found)


def duplicate_fields(body: bytes) -> list[str]:
    """The paths of the fields body gives more than once, in document order of
    the objects holding them ([] for a body that is not JSON: its own error says
    so elsewhere)."""
    twice = False

    def pairs_to_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        nonlocal twice
        obj = dict(pairs)
        if len(obj) == len(pairs):
            return obj
        twice = True
        return _Twice(pairs)

    try:
        parsed = json.loads(body, object_pairs_hook=pairs_to_object)
    except (ValueError, RecursionError):
        return []
    found: list[str] = []
    if twice:  # most bodies: no second walk
        _paths(parsed, "", found)
    return found
