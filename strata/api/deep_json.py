"""JSON nested deeper than orjson and Python's recursion go, read and written
as kube reads and writes it, in bounded time and without recursion.

kube reads JSON with Go's encoding/json, which refuses nesting past 10,000
levels ("invalid character '{' exceeded max depth") and takes anything less.
orjson stops at 1,024 levels when it reads and at 255 when it writes, and a
recursive walk of a value stops near Python's recursion limit (1,000 frames),
so a body nested 1,000 deep would otherwise end in a RecursionError (a 500).
Here: `loads` reads what orjson cannot by an iterative parser with Go's limit
(a body is at most a few MB, so its cost is bounded by its size), `dumps`
writes what orjson cannot, `encode` writes a value as Go writes kube's
half-decoded documents (some maps' keys sorted, others as they came), and
`go_print` is Go's %+v; each walks with a stack of its own."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping
from enum import Enum
from itertools import accumulate
from typing import Any

import orjson

from strata.api import gomarshal
from strata.api.gojson import quote_char

# Go's encoding/json maxNestingDepth: the 10,001st open bracket is refused.
GO_MAX_DEPTH = 10_000
_ORJSON_DEPTH = "depth limit exceeded"
_ORJSON_RECURSION = "Recursion limit reached"
# The largest body read past orjson's depth (about half a second of Python).
DEEP_BODY_BYTES = 128 * 1024

# One JSON token after optional whitespace, each exactly as JSON's grammar has
# it; possessive quantifiers keep a malformed string from backtracking.
_TOKEN = re.compile(
    rb"[ \t\r\n]*+(?:"
    rb'(?P<string>"(?:[^"\\\x00-\x1f]++|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*+")'
    rb"|(?P<number>-?(?:0|[1-9][0-9]*+)(?:\.[0-9]++)?(?:[eE][+-]?[0-9]++)?)"
    rb"|(?P<literal>true|false|null)"
    rb"|(?P<mark>[{}\[\],:]))"
)
_LITERALS: dict[bytes, Any] = {b"true": True, b"false": False, b"null": None}
_SPACE = b" \t\r\n"


class NestingError(json.JSONDecodeError):
    """Go's refusal of JSON nested past GO_MAX_DEPTH, in its words."""

    def __init__(self, char: int, position: int) -> None:
        message = f"invalid character {quote_char(char)} exceeded max depth"
        super().__init__(message, "", 0)
        self.args = (message,)
        self.position = position


class _Invalid(ValueError):
    """Not JSON (the caller answers with orjson's words for it)."""


# What the parser expects next.
_VALUE, _VALUE_OR_END, _KEY, _KEY_OR_END, _COLON, _COMMA_OR_END, _DONE = range(7)


def _start(at: int, mark: bytes, stack: list[Any]) -> Any:
    """A new container for mark ('{' or '['), refused past Go's depth."""
    if len(stack) >= GO_MAX_DEPTH:
        raise NestingError(mark[0], at)
    return {} if mark == b"{" else []


def _parse(body: bytes) -> Any:
    """body as JSON, read without recursion; NestingError past Go's depth,
    _Invalid for anything else that is not JSON."""
    stack: list[Any] = []  # the open containers
    keys: list[str] = []  # the key each open object's next value goes under
    root: Any = None
    state, position = _VALUE, 0
    match = _TOKEN.match
    while True:
        found = match(body, position)
        if found is None:
            if state == _DONE and not body[position:].strip(_SPACE):
                return root
            raise _Invalid
        kind = found.lastgroup or ""
        token, at, position = found[kind], found.start(kind), found.end()
        if state == _DONE:
            raise _Invalid
        if kind == "mark":
            outermost = not stack
            state = _mark(at, token, state, stack, keys)
            if outermost and stack:
                root = stack[0]
            continue
        if state in (_KEY, _KEY_OR_END):
            if kind != "string":
                raise _Invalid
            keys.append(orjson.loads(token))
            state = _COLON
            continue
        if state != _VALUE and state != _VALUE_OR_END:
            raise _Invalid
        value = _LITERALS[token] if kind == "literal" else orjson.loads(token)
        if not stack:
            root, state = value, _DONE
            continue
        _put(stack[-1], keys, value)
        state = _COMMA_OR_END


def _put(container: Any, keys: list[str], value: Any) -> None:
    if type(container) is list:
        container.append(value)
    else:
        container[keys.pop()] = value


def _mark(at: int, mark: bytes, state: int, stack: list[Any], keys: list[str]) -> int:
    """The state after a structural character."""
    if mark in b"{[":
        if state != _VALUE and state != _VALUE_OR_END:
            raise _Invalid
        child = _start(at, mark, stack)
        if stack:
            _put(stack[-1], keys, child)
        stack.append(child)
        return _KEY_OR_END if mark == b"{" else _VALUE_OR_END
    if mark in b"}]":
        closes_object = mark == b"}"
        if not stack or (type(stack[-1]) is dict) != closes_object:
            raise _Invalid
        if state not in (_COMMA_OR_END, _KEY_OR_END if closes_object else _VALUE_OR_END):
            raise _Invalid
        stack.pop()
        return _COMMA_OR_END if stack else _DONE
    if mark == b":":
        if state != _COLON:
            raise _Invalid
        return _VALUE
    if state != _COMMA_OR_END:  # a comma
        raise _Invalid
    return _KEY if type(stack[-1]) is dict else _VALUE


# An escape inside a string (an escaped quote ends none).
_ESCAPE = re.compile(rb"\\.", re.DOTALL)
_NOT_BRACKETS = bytes(c for c in range(256) if c not in b"[]{}")
# Opening brackets as 1 and closing ones as -1 (a signed byte).
_STEPS = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")
_CHUNK = 1 << 16


def _overflow(body: bytes) -> int | None:
    """The bracket whose opening takes body's nesting past GO_MAX_DEPTH, if
    one does, ignoring what else is wrong with body; each pass is the C of
    re, bytes and itertools, a chunk at a time."""
    # Without its escapes, every other run between quotes is a string's.
    outside = b"".join(_ESCAPE.sub(b"", body).split(b'"')[0::2])
    brackets = outside.translate(None, _NOT_BRACKETS)
    steps = memoryview(brackets.translate(_STEPS)).cast("b")
    level = 0
    for start in range(0, len(steps), _CHUNK):
        chunk = steps[start : start + _CHUNK]
        if level + max(accumulate(chunk)) <= GO_MAX_DEPTH:
            level += sum(chunk)
            continue
        for at, step in enumerate(chunk):
            level += step
            if level > GO_MAX_DEPTH:
                return brackets[start + at]
    return None


def loads(body: bytes) -> Any:
    """body as JSON, as Go reads it: nested up to GO_MAX_DEPTH. Raises
    NestingError past it, and orjson's own JSONDecodeError for what is not
    JSON."""
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as e:
        return past_orjson(body, e)


def past_orjson(body: bytes, refused: orjson.JSONDecodeError) -> Any:
    """body, which orjson refused, as Go reads it, if orjson refused it only
    for its depth: read by _parse, a Python loop of a few microseconds a
    token, in bodies up to DEEP_BODY_BYTES; a larger one is only looked at for
    Go's refusal. Raises NestingError past Go's depth, else refused."""
    if not str(refused).startswith(_ORJSON_DEPTH):
        raise refused
    if len(body) <= DEEP_BODY_BYTES:
        try:
            return _parse(body)
        except (_Invalid, orjson.JSONDecodeError):
            raise refused from None
    if (bracket := _overflow(body)) is not None:
        raise NestingError(bracket, 0)
    raise refused


class Style(Enum):
    """How Go writes a map of a half-decoded document (evanphx/json-patch's
    lazy nodes): as it came (a raw node), or with its keys sorted (a node the
    patch decoded), the whole tree under it or the map alone."""

    RAW_TREE = 1
    SORTED_TREE = 2
    SORTED_MAP = 3


Styles = Mapping[int, Style]
_NO_STYLES: dict[int, Style] = {}


def _key(key: Any) -> str:
    """A key as orjson's OPT_NON_STR_KEYS writes it (YAML's keys)."""
    if isinstance(key, str):
        return key
    return orjson.dumps(key).decode().strip('"') if key is not None else "null"


def _items(value: dict[Any, Any], sort: bool) -> Iterator[tuple[str, Any]]:
    pairs = ((_key(k), v) for k, v in value.items())
    return iter(sorted(pairs, key=lambda pair: pair[0]) if sort else list(pairs))


def _fast(value: Any, style: Style | None) -> bytes | None:
    """orjson's bytes for a whole tree written one way, when it can write them."""
    if style not in (Style.RAW_TREE, Style.SORTED_TREE):
        return None
    option = orjson.OPT_SORT_KEYS if style is Style.SORTED_TREE else 0
    try:
        return orjson.dumps(value, option=option | orjson.OPT_NON_STR_KEYS)
    except orjson.JSONEncodeError as e:
        if str(e) != _ORJSON_RECURSION:
            raise
        return None


def _write(value: Any, styles: Styles, inherited: Style | None = None) -> bytes:
    """value as JSON, written with a stack: each map as styles (by id) or the
    tree above it says, else as it came; leaves by orjson."""
    out: list[bytes] = []
    work: list[tuple[Any, Style | None] | bytes] = [(value, inherited)]
    while work:
        item = work.pop()
        if isinstance(item, bytes):
            out.append(item)
            continue
        node, style = item
        if not isinstance(node, dict | list):
            out.append(orjson.dumps(node))
            continue
        style = styles.get(id(node), style)
        if (whole := _fast(node, style)) is not None:
            out.append(whole)
            continue
        below = style if style in (Style.RAW_TREE, Style.SORTED_TREE) else None
        parts: list[tuple[Any, Style | None] | bytes] = []
        if isinstance(node, list):
            for i, child in enumerate(node):
                parts += [b","] if i else []
                parts.append((child, below))
            work += [b"]", *reversed(parts), b"["]
            continue
        sort = style in (Style.SORTED_TREE, Style.SORTED_MAP)
        for i, (key, child) in enumerate(_items(node, sort)):
            parts += [b","] if i else []
            parts += [orjson.dumps(key), b":", (child, below)]
        work += [b"}", *reversed(parts), b"{"]
    return b"".join(out)


def dumps(value: Any, *, non_str_keys: bool = False) -> bytes:
    """orjson.dumps(value), or the same bytes written without recursion for a
    value nested deeper than orjson writes."""
    try:
        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS if non_str_keys else 0)
    except orjson.JSONEncodeError as e:
        if str(e) != _ORJSON_RECURSION:
            raise
    return _write(value, _NO_STYLES)


def encode(value: Any, styles: Styles, top: Style | None = Style.SORTED_MAP) -> bytes:
    """value as Go's json.Marshal writes a half-decoded document: each map as
    styles says (by id), the top one as top; Go's escapes."""
    return gomarshal.escaped(_write(value, {**styles, id(value): top} if top else styles))


def _shortest(number: float) -> tuple[str, int]:
    """A positive float's shortest round-tripping digits (no leading or trailing
    zeros) and the decimal exponent of the first one."""
    text = repr(number)
    if "e" in text:
        mantissa, _, exponent = text.partition("e")
        return mantissa.replace(".", "").rstrip("0") or "0", int(exponent)
    whole, _, fraction = text.partition(".")
    if whole != "0":
        return (whole + fraction).rstrip("0"), len(whole) - 1
    significant = fraction.lstrip("0")
    return significant.rstrip("0"), -(len(fraction) - len(significant)) - 1


def go_float(number: float) -> str:
    """A float64 as Go's %v writes it (strconv's 'g' at the shortest precision:
    an exponent below 1e-4 and from 1e6 up, of at least two digits)."""
    if math.isnan(number):
        return "NaN"
    if math.isinf(number):
        return "+Inf" if number > 0 else "-Inf"
    sign = "-" if math.copysign(1.0, number) < 0 else ""
    if number == 0:
        return sign + "0"
    digits, exponent = _shortest(abs(number))
    if exponent < -4 or exponent >= 6:
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{mantissa}e{'-' if exponent < 0 else '+'}{abs(exponent):02d}"
    if exponent < 0:
        return f"{sign}0.{'0' * (-exponent - 1)}{digits}"
    whole = digits[: exponent + 1].ljust(exponent + 1, "0")
    fraction = digits[exponent + 1 :]
    return sign + whole + ("." + fraction if fraction else "")


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "<nil>"
    if isinstance(value, float):
        return go_float(value)
    return str(value)


def go_print(value: Any) -> str:
    """A decoded JSON value as Go's %+v prints it (maps' keys sorted)."""
    out: list[str] = []
    work: list[Any] = [(value,)]
    while work:
        item = work.pop()
        if isinstance(item, str):
            out.append(item)
            continue
        node = item[0]
        if isinstance(node, dict):
            parts: list[Any] = []
            for i, key in enumerate(sorted(node)):
                parts += [" "] if i else []
                parts += [f"{key}:", (node[key],)]
            work += ["]", *reversed(parts), "map["]
        elif isinstance(node, list):
            parts = []
            for i, child in enumerate(node):
                parts += [" "] if i else []
                parts.append((child,))
            work += ["]", *reversed(parts), "["]
        else:
            out.append(_scalar(node))
    return "".join(out)


def depth(value: Any) -> int:
    """How deep value's maps and lists nest (0 for a scalar)."""
    deepest = 0
    work: list[tuple[Any, int]] = [(value, 0)]
    while work:
        node, level = work.pop()
        if isinstance(node, dict | list):
            level += 1
            deepest = max(deepest, level)
            children = node.values() if isinstance(node, dict) else node
            work += [(child, level) for child in children if isinstance(child, dict | list)]
    return deepest
