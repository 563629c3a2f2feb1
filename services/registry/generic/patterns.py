"""A schema's `pattern` as kube runs it: Go's regexp, RE2 syntax matched in
linear time, never Python's backtracking `re` (where `^(a+)+$` against forty
`a` and a `!` takes hours, and blocks every request behind it).

Google's RE2 (google-re2) stands in for Go's regexp/syntax, its sibling: the
same syntax, the same errors, which RE2 words its own way and Go's words are
given back here ("error parsing regexp: missing closing ): `(`"). A value
matches as Go's MatchString does: anywhere in it, unless the pattern anchors.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache
from typing import Any

import re2

# RE2 compiles a Unicode class into UTF-8 automata, far bigger than Go's
# program, whose limit is in instructions: `\pL{1000}`, which Go takes, needs
# about 20 MiB of RE2 program (RE2's default budget is 8 MiB).
_MAX_MEM = 64 << 20

# RE2's words for an error, and Go's (regexp/syntax ErrorCode).
_GO_WORDS = {
    "unexpected error": "regexp/syntax: internal error",
    "invalid escape sequence": "invalid escape sequence",
    "invalid character class": "invalid character class",
    "invalid character class range": "invalid character class range",
    "missing ]": "missing closing ]",
    "missing )": "missing closing )",
    "unexpected )": "unexpected )",
    "trailing \\": "trailing backslash at end of expression",
    "no argument for repetition operator": "missing argument to repetition operator",
    "invalid repetition size": "invalid repeat count",
    "bad repetition operator": "invalid nested repetition operator",
    "invalid perl operator": "invalid or unsupported Perl syntax",
    "invalid UTF-8": "invalid UTF-8",
    "invalid named capture group": "invalid named capture",
}
_TOO_LARGE = "pattern too large - compile failed"


class PatternError(ValueError):
    """A pattern Go's regexp does not compile; its text is Go's error."""


def _go_error(code: str, expr: str) -> str:
    return f"error parsing regexp: {code}: `{expr}`"


def _syntax(pattern: str) -> Iterator[int]:
    r"""Where pattern's syntax is: the index of each character outside a
    character class and a \Q...\E quote, an escape's backslash standing for
    the escape."""
    i, in_class = 0, False
    while i < len(pattern):
        if pattern[i] == "\\":
            if not in_class and pattern.startswith("Q", i + 1):
                end = pattern.find("\\E", i + 2)
                i = len(pattern) if end < 0 else end + 2
                continue
            if not in_class:
                yield i
            i += 2
        elif in_class:
            if pattern.startswith("[:", i) and (end := pattern.find(":]", i + 2)) >= 0:
                i = end + 2
                continue
            in_class = pattern[i] != "]"
            i += 1
        else:
            yield i
            in_class = pattern[i] == "["
            i += 1
            if in_class:
                # A first "]" (after a "^") is one of the class's characters.
                i += pattern.startswith("^", i)
                i += pattern.startswith("]", i)


def _any_byte(pattern: str) -> bool:
    r"""Whether pattern has RE2's `\C` (any byte), which Go's syntax lacks."""
    return any(pattern.startswith("\\C", i) for i in _syntax(pattern))


def _too_deep(pattern: str) -> bool:
    """Whether pattern's groups nest deeper than Go's tree may (1000 levels:
    a capturing group is one, and what it holds at least one more); RE2 has
    no such limit."""
    depth = deepest = 0
    groups: list[bool] = []
    for i in _syntax(pattern):
        if pattern[i] == "(":
            capturing = pattern.startswith(("(?P<", "(?<"), i) or not pattern.startswith("(?", i)
            groups.append(capturing)
            depth += capturing
            deepest = max(deepest, depth)
        elif pattern[i] == ")" and groups:
            depth -= groups.pop()
    return deepest >= 1000


def _lookbehind_error(pattern: str, opening: str) -> str:
    """Go's error for a lookbehind, which Go reads as a named group's "(?<",
    its name up to a ">"."""
    at = next(
        (i for i in _syntax(pattern) if pattern.startswith(opening, i)), pattern.find(opening)
    )
    end = pattern.find(">", at)
    return _go_error("invalid named capture", pattern[at : None if end < 0 else end + 1])


def _go_words(pattern: str, text: str) -> str:
    """Go's error for a pattern RE2 refused with text."""
    if text == _TOO_LARGE:
        return _go_error("expression too large", pattern)
    code, _, expr = text.partition(": ")
    if code == "invalid UTF-8" and pattern.endswith("\\x{"):
        # RE2's word for a \x{ cut short (a str pattern is always UTF-8).
        return _go_error("invalid escape sequence", "\\x{")
    if code == "invalid perl operator" and expr in ("(?<=", "(?<!"):
        return _lookbehind_error(pattern, expr)
    return _go_error(_GO_WORDS.get(code, code), expr)


@lru_cache(maxsize=256)
def _compiled(pattern: str) -> tuple[Any, str]:
    """The compiled pattern and "", or None and the error Go's regexp would
    give (kept, so that a bad pattern is not compiled again at every object)."""
    if _any_byte(pattern):
        return None, _go_error("invalid escape sequence", "\\C")
    options = re2.Options()
    options.log_errors = False
    options.max_mem = _MAX_MEM
    try:
        compiled = re2.compile(pattern, options)
    except re2.error as e:
        text = e.args[0]
        return None, _go_words(pattern, text.decode() if isinstance(text, bytes) else str(text))
    if _too_deep(pattern):
        return None, _go_error("expression nests too deeply", pattern)
    return compiled, ""


def compile_error(pattern: str) -> str | None:
    """Go's error for a pattern its regexp does not compile, else None."""
    return _compiled(pattern)[1] or None


def matches(pattern: str, value: str) -> bool:
    """Whether pattern matches somewhere in value, as Go's MatchString does; a
    PatternError if Go's regexp does not compile pattern."""
    compiled, refused = _compiled(pattern)
    if refused:
        raise PatternError(refused)
    return compiled.search(value) is not None
