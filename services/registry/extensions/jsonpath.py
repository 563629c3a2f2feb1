"""The JSONPath of CRD printer columns (client-go's jsonpath, the part CRDs use):
`.spec.replicas`, `.items[0]`, `.list[*].name`, `['dotted.key']` and filters
such as `.status.conditions[?(@.type=="Ready")].status`."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

_STEP = re.compile(
    r"""\.(?P<field>[A-Za-z0-9_\-$]+)
    |\[(?P<quote>['"])(?P<key>.*?)(?P=quote)\]
    |\[(?P<index>-?\d+)\]
    |\[(?P<all>\*)\]
    |\[\?\(@(?P<subpath>(\.[A-Za-z0-9_\-]+)+)\s*(?P<op>==|!=)\s*(?P<literal>"[^"]*"|'[^']*'|[^)\s]+)\s*\)\]
    """,
    re.VERBOSE,
)


@dataclass(frozen=True)
class _Step:
    kind: str
    arg: Any = None
    op: str = ""
    literal: Any = None


class JSONPathError(ValueError):
    pass


def parse(path: str) -> list[_Step]:
    """The steps of a path; JSONPathError for one this subset cannot read."""
    text = path.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1]
    if not text.startswith(".") and not text.startswith("["):
        raise JSONPathError(f"unrecognized JSONPath {path!r}")
    steps: list[_Step] = []
    at = 0
    while at < len(text):
        m = _STEP.match(text, at)
        if m is None:
            raise JSONPathError(f"unrecognized JSONPath {path!r} at {text[at:]!r}")
        if m["field"] is not None:
            steps.append(_Step("field", m["field"]))
        elif m["key"] is not None:
            steps.append(_Step("field", m["key"]))
        elif m["index"] is not None:
            steps.append(_Step("index", int(m["index"])))
        elif m["all"] is not None:
            steps.append(_Step("all"))
        else:
            literal = m["literal"]
            value: Any = literal[1:-1] if literal[0] in "'\"" else _bare(literal)
            steps.append(_Step("filter", m["subpath"][1:].split("."), m["op"], value))
        at = m.end()
    return steps


def _bare(literal: str) -> Any:
    if literal in ("true", "false"):
        return literal == "true"
    try:
        return int(literal)
    except ValueError:
        try:
            return float(literal)
        except ValueError:
            return literal


def _walk(value: Any, steps: list[_Step]) -> Iterator[Any]:
    if not steps:
        yield value
        return
    step, rest = steps[0], steps[1:]
    if step.kind == "field":
        if isinstance(value, dict) and step.arg in value:
            yield from _walk(value[step.arg], rest)
    elif step.kind == "index":
        if isinstance(value, list) and -len(value) <= step.arg < len(value):
            yield from _walk(value[step.arg], rest)
    elif step.kind == "all":
        items = value if isinstance(value, list) else (value or {}).values()
        for item in items if isinstance(value, list | dict) else ():
            yield from _walk(item, rest)
    elif isinstance(value, list):
        for item in value:
            found = list(_walk(item, [_Step("field", part) for part in step.arg]))
            if found and (found[0] == step.literal) == (step.op == "=="):
                yield from _walk(item, rest)


def find(value: Any, steps: list[_Step]) -> list[Any]:
    """Every value the path leads to (none where it leads nowhere)."""
    return list(_walk(value, steps))
