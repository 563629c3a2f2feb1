"""What kube's strict decoder says of a body besides its values, in its words
and its order: fields a JSON object gives twice (`duplicate field
"spec.paused"`), the fields its kind does not know (`unknown field
"spec.unknown1"`, found by the caller's schema), and a JSON patch's operations
with fields an operation does not have.

A plain JSON parser keeps the last of a repeated key without a word, and
orjson is one; a body whose fieldValidation cares is read a second time by the
standard library's parser, whose object_pairs_hook sees every key as given.
That second parse costs several times the first, so a caller holding the
object orjson made may first ask `may_repeat`: the keys its text gives against
the keys the object kept, counted in C, tell a body without repeats (nearly
all) at a fraction of the price. Both the gateway (patch bodies) and the
registry (objects) ask."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from typing import Any

# The fields of a JSON patch operation (RFC 6902), as kube decodes them.
_OPERATION_FIELDS = frozenset(("op", "path", "from", "value"))


class _Twice(dict[str, Any]):
    """A JSON object that gave some of its keys more than once: its pairs as given."""

    __slots__ = ("pairs",)

    def __init__(self, pairs: list[tuple[str, Any]]) -> None:
        super().__init__(pairs)
        self.pairs = pairs


# A key's closing quote with whitespace before its colon.
_SPACED_KEY = re.compile(rb'"[ \t\r\n]+:')


def keys_in(value: Any) -> int:
    """How many keys the objects in a decoded JSON value hold, all levels
    (walked with a stack: a body may nest a thousand deep)."""
    count = 0
    work = [value] if type(value) is dict or type(value) is list else []
    while work:
        node = work.pop()
        if type(node) is dict:
            count += len(node)
            children: Iterable[Any] = node.values()
        else:
            children = node
        for item in children:
            if type(item) is dict or type(item) is list:
                work.append(item)
    return count


def may_repeat(body: bytes, keys: int) -> bool:
    """Whether body (valid JSON) may give a key twice, given keys_in of what a
    parser that keeps the last of a repeated key made of it.

    In JSON a string followed by a colon is a key, and a quote inside a string
    is escaped, so the quotes not after a backslash that a colon follows count
    the keys as given; a parser kept fewer exactly when one repeats. Two rare
    shapes defeat that count, a quote after an escaped backslash (`\\\\"`)
    and whitespace before a colon (compact and indented JSON have none): such
    a body is taken to repeat, and read again."""
    if b'\\\\"' in body or _SPACED_KEY.search(body):
        return True
    return body.count(b'":') - body.count(b'\\":') != keys


def _parsed(body: bytes) -> tuple[Any, bool] | None:
    """body parsed with every repeated key kept, and whether any key repeats
    (None when body is not JSON: its own error says so elsewhere)."""
    twice = False

    def pairs_to_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        nonlocal twice
        obj = dict(pairs)
        if len(obj) == len(pairs):
            return obj
        twice = True
        return _Twice(pairs)

    try:
        return json.loads(body, object_pairs_hook=pairs_to_object), twice
    except (ValueError, RecursionError):
        return None


def _children(value: Any, path: str) -> Iterator[tuple[str, bool | None, Any]]:
    """A map's fields as (path, whether its key was given before in the map,
    value), its repeated keys' each time; a list's items as (path, None, item)."""
    if isinstance(value, dict):
        pairs = value.pairs if isinstance(value, _Twice) else value.items()
        seen: set[str] = set()
        for key, item in pairs:
            again = key in seen
            seen.add(key)
            yield (f"{path}.{key}" if path else key), again, item
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield f"{path}[{i}]", None, item


def _fields(value: Any, path: str, found: list[tuple[str, bool]]) -> None:
    """Every field of value as the decoder meets it: (path, whether that key
    was already given in its object), repeated keys' values walked each time,
    with a stack of walks (not recursion)."""
    stack = [_children(value, path)]
    while stack:
        step = next(stack[-1], None)
        if step is None:
            stack.pop()
            continue
        at, again, item = step
        if again is not None:
            found.append((at, again))
        if isinstance(item, dict | list):
            stack.append(_children(item, at))


def _repeated(fields: list[tuple[str, bool]]) -> list[str]:
    """The paths given twice, once each, where the second one comes."""
    paths: list[str] = []
    for path, again in fields:
        if again and path not in paths:
            paths.append(path)
    return paths


def duplicate_fields(body: bytes) -> list[str]:
    """The paths of the fields body gives more than once, in document order."""
    parsed = _parsed(body)
    if parsed is None or not parsed[1]:  # most bodies: no walk at all
        return []
    found: list[tuple[str, bool]] = []
    _fields(parsed[0], "", found)
    return _repeated(found)


def _under(path: str, parent: str) -> bool:
    return path == parent or path.startswith((f"{parent}.", f"{parent}["))


def key_order(path: str) -> str:
    """A sort key putting field paths in the order a decoder meets them in JSON
    whose keys are sorted (a parent before its children, "a" before "a2")."""
    return path.translate({ord("."): "\x00", ord("["): "\x01"})


def object_errors(
    body: bytes, unknown: list[str], *, typed: bool, keys: int | None = None
) -> list[str]:
    """kube's strict decoding errors for an object's JSON body, given the paths
    of the fields its schema does not know.

    A built-in kind's decoder (typed) reports as it reads: unknown and
    duplicate fields interleaved in document order, and a field both unknown
    and duplicated (or inside an unknown one) as unknown only. A custom
    resource's reports every duplicate first, then the unknown fields its
    pruning found, in key order. keys: keys_in of the object as first decoded,
    when the caller has it (the body is read again only if may_repeat)."""
    parsed = _parsed(body) if keys is None or may_repeat(body, keys) else None
    if parsed is None or not parsed[1]:
        listed = unknown if typed else sorted(unknown, key=key_order)
        return [f'unknown field "{p}"' for p in listed]
    found: list[tuple[str, bool]] = []
    _fields(parsed[0], "", found)
    if not typed:
        problems = [f'duplicate field "{p}"' for p in _repeated(found)]
        return problems + [f'unknown field "{p}"' for p in sorted(unknown, key=key_order)]
    pending = dict.fromkeys(unknown)
    reported: set[str] = set()
    problems = []
    for path, again in found:
        if not again and path in pending:
            del pending[path]
            problems.append(f'unknown field "{path}"')
        elif again and path not in reported and not any(_under(path, u) for u in unknown):
            reported.add(path)
            problems.append(f'duplicate field "{path}"')
    return problems + [f'unknown field "{p}"' for p in pending]


def json_patch_errors(body: bytes) -> list[str]:
    """kube's strict decoding errors for a JSON patch's operations: fields an
    operation does not have, and fields it gives twice ("[1].path")."""
    parsed = _parsed(body)
    if parsed is None or not isinstance(parsed[0], list):
        return []
    problems: list[str] = []
    for i, operation in enumerate(parsed[0]):
        if not isinstance(operation, dict):
            continue
        pairs = operation.pairs if isinstance(operation, _Twice) else operation.items()
        seen: set[str] = set()
        reported: set[str] = set()
        for key, _ in pairs:
            if key not in reported and (key not in _OPERATION_FIELDS or key in seen):
                reported.add(key)
                what = "unknown" if key not in _OPERATION_FIELDS else "duplicate"
                problems.append(f'json patch {what} field "[{i}].{key}"')
            seen.add(key)
    return problems
