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

from strata.api import goquote, names
from strata.api.errors import bad_request


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
                have = None if value is None else _go_int(value)
                want = _go_int(self.values[0])
                if have is None or want is None:
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


# kube's label selector lexer (apimachinery labels/selector.go): its tokens,
# and the characters that end an identifier.
_TOKENS = {
    ")": "closed_par",
    ",": "comma",
    "!": "does_not_exist",
    "==": "double_equals",
    "=": "equals",
    ">": "greater_than",
    "in": "in",
    "<": "less_than",
    "!=": "not_equals",
    "notin": "not_in",
    "(": "open_par",
}
_SPECIAL = frozenset("=!(),><")
_WHITESPACE = frozenset(" \t\r\n")
_IDENTIFIER, _END, _ERROR = "identifier", "end", "error"
# Where a key and its operator are read, "in" and "notin" are keywords;
# everywhere else (values, keys after a comma) they are identifiers.
_KEYWORDS_AS_IDENTIFIERS = frozenset({"in", "not_in"})
_OPERATORS = {
    "in": "in",
    "not_in": "notin",
    "equals": "=",
    "double_equals": "=",
    "not_equals": "!=",
    "greater_than": "gt",
    "less_than": "lt",
}
# selection's binary operators as kube's message lists them.
_BINARY_OPERATORS = "in, notin, =, ==, !=, gt, lt"
_INT64 = re.compile(r"[+-]?[0-9]+")


def _lex(text: str) -> list[tuple[str, str]]:
    """text's tokens, as kube's Lexer scans them, up to the end token."""
    items: list[tuple[str, str]] = []
    pos, n = 0, len(text)
    while True:
        while pos < n and text[pos] in _WHITESPACE:
            pos += 1
        if pos == n:
            items.append((_END, ""))
            return items
        start = pos
        if text[pos] in _SPECIAL:
            # The longest run of special characters that is a token.
            token = ""
            while pos < n and text[pos] in _SPECIAL:
                if text[start : pos + 1] in _TOKENS:
                    token = text[start : pos + 1]
                elif token:
                    break
                pos += 1
            if not token:
                items.append((_ERROR, f"error expected: keyword found '{text[start:pos]}'"))
            else:
                pos = start + len(token)
                items.append((_TOKENS[token], token))
            continue
        while pos < n and text[pos] not in _SPECIAL and text[pos] not in _WHITESPACE:
            pos += 1
        word = text[start:pos]
        items.append((_TOKENS.get(word, _IDENTIFIER), word))


class _Parser:
    """kube's label selector Parser, and its error messages word for word."""

    def __init__(self, text: str) -> None:
        self._items = _lex(text)
        self._at = 0

    def _lookahead(self, values: bool = True) -> tuple[str, str]:
        token, literal = self._items[self._at]
        if values and token in _KEYWORDS_AS_IDENTIFIERS:
            token = _IDENTIFIER
        return token, literal

    def _consume(self, values: bool = True) -> tuple[str, str]:
        found = self._lookahead(values)
        self._at += 1
        return found

    def parse(self) -> list[Requirement]:
        requirements: list[Requirement] = []
        while True:
            token, literal = self._lookahead()
            if token == _END:
                return requirements
            if token not in (_IDENTIFIER, "does_not_exist"):
                raise bad_request(f"found '{literal}', expected: !, identifier, or 'end of string'")
            try:
                requirements.append(self._requirement())
            except _RequirementError as e:
                raise bad_request(f"unable to parse requirement: {e}") from None
            token, literal = self._consume()
            if token == _END:
                return requirements
            if token != "comma":
                raise bad_request(f"found '{literal}', expected: ',' or 'end of string'")
            token, literal = self._lookahead()
            if token not in (_IDENTIFIER, "does_not_exist"):
                raise bad_request(f"found '{literal}', expected: identifier after ','")

    def _requirement(self) -> Requirement:
        token, key = self._consume()
        absent = token == "does_not_exist"
        if absent:
            token, key = self._consume()
        if token != _IDENTIFIER:
            raise _RequirementError(f"found '{key}', expected: identifier")
        if errs := names.qualified_name_errors(key):
            raise _RequirementError(_invalid("<nil>", key, "; ".join(errs)))
        if absent or self._lookahead()[0] in (_END, "comma"):
            return Requirement(key=key, op="!" if absent else "exists")
        token, literal = self._consume(values=False)
        op = _OPERATORS.get(token)
        if op is None:
            raise _RequirementError(f"found '{literal}', expected: {_BINARY_OPERATORS}")
        values = self._set_values() if op in ("in", "notin") else self._exact_value()
        return _checked(Requirement(key=key, op=op, values=values))

    def _set_values(self) -> tuple[str, ...]:
        token, literal = self._consume()
        if token != "open_par":
            raise _RequirementError(f"found '{literal}' expected: '('")
        token, literal = self._lookahead()
        if token == "closed_par":  # "()"
            self._consume()
            return ("",)
        if token not in (_IDENTIFIER, "comma"):
            raise _RequirementError(f"found '{literal}', expected: ',', ')' or identifier")
        values = self._identifiers()
        if self._consume()[0] != "closed_par":
            raise _RequirementError(f"found '{literal}', expected: ')'")
        return tuple(sorted(values))

    def _identifiers(self) -> set[str]:
        values: set[str] = set()
        while True:
            token, literal = self._consume()
            if token == _IDENTIFIER:
                values.add(literal)
                following, after = self._lookahead()
                if following == "closed_par":
                    return values
                if following != "comma":
                    raise _RequirementError(f"found '{after}', expected: ',' or ')'")
            elif token == "comma":  # "(,", ",)" and ",," each hold an empty value
                if not values:
                    values.add("")
                following, _ = self._lookahead()
                if following == "closed_par":
                    values.add("")
                    return values
                if following == "comma":
                    self._consume()
                    values.add("")
            else:
                raise _RequirementError(f"found '{literal}', expected: ',', or identifier")

    def _exact_value(self) -> tuple[str, ...]:
        if self._lookahead()[0] in (_END, "comma"):
            return ("",)
        token, literal = self._consume()
        if token != _IDENTIFIER:
            raise _RequirementError(f"found '{literal}', expected: identifier")
        return (literal,)


class _RequirementError(Exception):
    """What kube's parser wraps in "unable to parse requirement: "."""


def _invalid(field: str, value: str, detail: str) -> str:
    return f"{field}: Invalid value: {goquote.quote(value)}: {detail}"


def _go_int(text: str) -> int | None:
    """text as Go's strconv.ParseInt(text, 10, 64) reads it, or None."""
    if not _INT64.fullmatch(text):
        return None
    value = int(text)
    return value if -(2**63) <= value < 2**63 else None


def _checked(requirement: Requirement) -> Requirement:
    """kube's NewRequirement checks of the values, all reported at once."""
    problems = []
    for i, value in enumerate(requirement.values):
        if requirement.op in ("gt", "lt") and _go_int(value) is None:
            detail = "for 'Gt', 'Lt' operators, the value must be an integer"
            problems.append(_invalid(f"values[{i}]", value, detail))
    for i, value in enumerate(requirement.values):
        if errs := names.label_value_errors(value):
            problems.append(_invalid(f"values[{i}][{requirement.key}]", value, "; ".join(errs)))
    if len(problems) > 1:
        raise _RequirementError("[" + ", ".join(problems) + "]")
    if problems:
        raise _RequirementError(problems[0])
    return requirement


def parse_label_selector(text: str) -> LabelSelector:
    """Parse `labelSelector` as kube does (its requirements sorted by key); a
    malformed one is a 400 BadRequest in kube's words."""
    requirements = _Parser(text).parse()
    return LabelSelector(tuple(sorted(requirements, key=lambda r: r.key)))


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


def _split_terms(text: str) -> list[str]:
    """text's terms split at the commas a backslash does not escape."""
    terms, start, escaped = [], 0, False
    for i, c in enumerate(text):
        if escaped:
            escaped = False
        elif c == "\\":
            escaped = True
        elif c == ",":
            terms.append(text[start:i])
            start = i + 1
    terms.append(text[start:])
    return terms


def _split_term(term: str) -> tuple[str, str, str] | None:
    """A term's field, operator and value: at the first place an operator
    starts ("!=", then "==", then "=" tried there), as kube splits it."""
    for i in range(len(term)):
        for op in ("!=", "==", "="):
            if term.startswith(op, i):
                return term[:i], op, term[i + len(op) :]
    return None


def _unescaped(value: str) -> str:
    """A field selector value with its \\\\, \\, and \\= escapes undone (kube's
    UnescapeValue); a bare , or = or another escape is a 400."""
    out, escaped = [], False
    for c in value:
        if escaped:
            if c not in "\\,=":
                raise bad_request(f"invalid field selector: invalid escape sequence: \\{c}")
            out.append(c)
            escaped = False
        elif c == "\\":
            escaped = True
        elif c in ",=":
            # Go's %v of a rune: its number.
            raise bad_request(f"invalid field selector: unescaped character in value: {ord(c)}")
        else:
            out.append(c)
    if escaped:
        raise bad_request("invalid field selector: invalid escape sequence: \\")
    return "".join(out)


def parse_field_selector(
    text: str, supported: frozenset[str], *, field_label_conversion: bool = False
) -> FieldSelector:
    """Parse `fieldSelector` as kube does: terms split at unescaped commas and
    taken in sorted order, empty ones skipped, nothing trimmed; bad syntax and
    unknown fields are a 400 BadRequest in kube's words. An unknown field is
    "field label not supported" for the kinds kube converts field labels of
    (field_label_conversion: secrets, namespaces, events, services, pods), its
    "is not a known field selector" for the rest."""
    requirements = []
    for term in sorted(_split_terms(text)):
        if not term:
            continue
        split = _split_term(term)
        if split is None:
            raise bad_request(f"invalid selector: '{text}'; can't understand '{term}'")
        key, op, value = split
        requirements.append(
            Requirement(key=key, op="!=" if op == "!=" else "=", values=(_unescaped(value),))
        )
    for r in requirements:
        if r.key in supported:
            continue
        if field_label_conversion:
            raise bad_request(f"field label not supported: {r.key}")
        known = ", ".join(goquote.quote(f) for f in sorted(supported))
        raise bad_request(f"{goquote.quote(r.key)} is not a known field selector: only {known}")
    return FieldSelector(tuple(requirements))
