"""Label and field selectors with kube's grammar (apimachinery labels/fields).

Parsed once per request into small predicate objects; matching is done on the
labels and field values the storage envelope already carries, so filtering
never needs to decode an object.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from strata.api import names
from strata.api.errors import StatusError, bad_request


@dataclass(frozen=True, kw_only=True)
class Requirement:
    key: str
    op: str  # one of: =, !=, in, notin, exists, !, gt, lt
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        value = labels.get(self.key)
        match self.op:
            case "=" | "in":
                return present and value in self.values
            case "!=" | "notin":
                return not present or value not in self.values
            case "exists":
                return present
            case "!":
                return not present
            case "gt" | "lt":
                if value is None:
                    return False
                try:
                    have, want = int(value), int(self.values[0])
                except ValueError:
                    return False
                return have > want if self.op == "gt" else have < want
        return False

    def __str__(self) -> str:
        """The requirement as a selector string reads it back (kube's String)."""
        match self.op:
            case "in" | "notin":
                return f"{self.key} {self.op} ({','.join(self.values)})"
            case "exists":
                return self.key
            case "!":
                return f"!{self.key}"
            case "gt" | "lt":
                return f"{self.key}{'>' if self.op == 'gt' else '<'}{self.values[0]}"
        return f"{self.key}{self.op}{self.values[0]}"


@dataclass(frozen=True)
class LabelSelector:
    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(r.matches(labels) for r in self.requirements)

    @property
    def empty(self) -> bool:
        return not self.requirements

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)


# metav1.LabelSelector's operators and the requirement each becomes.
SELECTOR_OPERATORS = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}


def from_label_selector(selector: Mapping[str, Any]) -> LabelSelector:
    """A metav1.LabelSelector (matchLabels and matchExpressions, already valid)
    as a selector, its requirements sorted by key as kube's
    LabelSelectorAsSelector sorts them."""
    requirements = [
        Requirement(key=str(k), op="=", values=(str(v),))
        for k, v in dict(selector.get("matchLabels") or {}).items()
    ]
    for expression in list(selector.get("matchExpressions") or []):
        values = tuple(sorted(str(v) for v in expression.get("values") or []))
        op = SELECTOR_OPERATORS[expression["operator"]]
        requirements.append(Requirement(key=str(expression["key"]), op=op, values=values))
    return LabelSelector(tuple(sorted(requirements, key=lambda r: r.key)))


def _split_top_level(text: str) -> list[str]:
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    parts.append("".join(current))
    return parts


_SET = re.compile(r"^(?P<key>[^\s!=<>()]+)\s+(?P<op>in|notin)\s*\((?P<values>[^()]*)\)$")
_BINARY = re.compile(r"^(?P<key>[^\s!=<>()]+)\s*(?P<op>==|=|!=|>|<)\s*(?P<value>[^\s!=<>(),]*)$")


def _invalid(message: str) -> StatusError:
    return bad_request(f"unable to parse requirement: {message}")


def _checked_key(key: str) -> str:
    if names.qualified_name_errors(key):
        raise _invalid(
            f'<nil>: Invalid value: "{key}": name part must consist of alphanumeric '
            "characters, '-', '_' or '.', and must start and end with an alphanumeric "
            "character"
        )
    return key


def _checked_value(value: str) -> str:
    if names.label_value_errors(value):
        raise _invalid(
            f'values[0]: Invalid value: "{value}": a valid label must be an empty '
            "string or consist of alphanumeric characters, '-', '_' or '.', and must "
            "start and end with an alphanumeric character"
        )
    return value


def parse_label_selector(text: str) -> LabelSelector:
    """Parse `labelSelector`; a malformed one is a 400 BadRequest."""
    text = text.strip()
    if not text:
        return LabelSelector()
    requirements = []
    for raw in _split_top_level(text):
        part = raw.strip()
        if not part:
            raise bad_request(f"found '', expected: identifier after ','; in {text!r}")
        if m := _SET.match(part):
            values = tuple(_checked_value(v.strip()) for v in m["values"].split(","))
            requirements.append(Requirement(key=_checked_key(m["key"]), op=m["op"], values=values))
        elif m := _BINARY.match(part):
            op = {"==": "=", "=": "=", "!=": "!=", ">": "gt", "<": "lt"}[m["op"]]
            value = m["value"]
            if op in ("gt", "lt") and not value.lstrip("-").isdigit():
                raise _invalid(f"for 'Gt', 'Lt' operators, the value must be an integer: {value!r}")
            requirements.append(
                Requirement(key=_checked_key(m["key"]), op=op, values=(_checked_value(value),))
            )
        elif part.startswith("!"):
            requirements.append(Requirement(key=_checked_key(part[1:].strip()), op="!"))
        elif re.match(r"^[^\s!=<>()]+$", part):
            requirements.append(Requirement(key=_checked_key(part), op="exists"))
        else:
            raise bad_request(f"unable to parse requirement: found unexpected input in {part!r}")
    return LabelSelector(tuple(requirements))


@dataclass(frozen=True)
class FieldSelector:
    requirements: tuple[Requirement, ...] = ()

    def matches(self, fields: Mapping[str, str]) -> bool:
        return all(r.matches(fields) for r in self.requirements)

    @property
    def empty(self) -> bool:
        return not self.requirements

    def exact(self, field: str) -> str | None:
        """The value a field must equal, when the selector pins it (for index use)."""
        for r in self.requirements:
            if r.key == field and r.op == "=":
                return r.values[0]
        return None


def parse_field_selector(text: str, supported: frozenset[str]) -> FieldSelector:
    """Parse `fieldSelector`; unknown fields and bad syntax are 400 BadRequest."""
    text = text.strip()
    if not text:
        return FieldSelector()
    requirements = []
    for part in text.split(","):
        m = re.match(r"^(?P<key>[^=!]+)(?P<op>==|=|!=)(?P<value>.*)$", part.strip())
        if not m:
            raise bad_request(f"invalid selector: '{text}'; can't understand '{part}'")
        key = m["key"].strip()
        if key not in supported:
            raise bad_request(f"field label not supported: {key}")
        op = "!=" if m["op"] == "!=" else "="
        requirements.append(Requirement(key=key, op=op, values=(m["value"].strip(),)))
    return FieldSelector(tuple(requirements))
