"""Go's encoding/json error messages, for the places kube answers with them.

kube decodes request bodies and continue tokens with Go's JSON decoder and
puts its error text in the 400 it answers ("invalid character 'h' looking for
beginning of value", "unexpected end of JSON input", "json: cannot unmarshal
array into ..."). Python's parsers word theirs differently and stop at
different places, so this is a port of Go's scanner (encoding/json/scanner.go):
a state machine that finds the first byte Go refuses and says why as Go does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

END_OF_INPUT = "unexpected end of JSON input"
_SPACE = frozenset(b" \t\r\n")
_DIGITS = frozenset(b"0123456789")
_HEX = frozenset(b"0123456789abcdefABCDEF")
_ESCAPES = frozenset(b'bfnrt\\/"')
_GO_ESCAPES = {7: "\\a", 8: "\\b", 12: "\\f", 10: "\\n", 13: "\\r", 9: "\\t", 11: "\\v"}
_OBJECT_KEY, _OBJECT_VALUE, _ARRAY_VALUE = 0, 1, 2


class _SyntaxError(Exception):
    pass


def quote_char(c: int) -> str:
    """A byte as Go's json quoteChar writes it: in single quotes, escaped as
    strconv.Quote escapes the rune of that number."""
    if c == ord("'"):
        return "'\\''"
    if c == ord('"'):
        return "'\"'"
    if c == ord("\\"):
        text = "\\\\"
    elif c in _GO_ESCAPES:
        text = _GO_ESCAPES[c]
    elif c < 0x20 or c == 0x7F:
        text = f"\\x{c:02x}"
    elif 0x80 <= c < 0xA0 or c == 0xAD:  # not printable in Go's unicode tables
        text = f"\\u{c:04x}"
    else:
        text = chr(c)
    return f"'{text}'"


def _invalid(c: int, context: str) -> _SyntaxError:
    return _SyntaxError(f"invalid character {quote_char(c)} {context}")


Step = Callable[[int], None]


class _Scanner:
    """Go's scanner: step is the state, fed one byte at a time."""

    def __init__(self) -> None:
        self.stack: list[int] = []
        self.step: Step = self._begin_value
        self.done = False

    # values
    def _begin_value_or_empty(self, c: int) -> None:
        if c in _SPACE:
            return
        if c == ord("]"):
            self._end_value(c)
            return
        self._begin_value(c)

    def _begin_value(self, c: int) -> None:
        if c in _SPACE:
            return
        match chr(c):
            case "{":
                self.stack.append(_OBJECT_KEY)
                self.step = self._begin_string_or_empty
            case "[":
                self.stack.append(_ARRAY_VALUE)
                self.step = self._begin_value_or_empty
            case '"':
                self.step = self._in_string
            case "-":
                self.step = self._neg
            case "0":
                self.step = self._zero
            case "t":
                self.step = self._literal("true", 1)
            case "f":
                self.step = self._literal("false", 1)
            case "n":
                self.step = self._literal("null", 1)
            case _ if c in _DIGITS:
                self.step = self._one
            case _:
                raise _invalid(c, "looking for beginning of value")

    def _begin_string_or_empty(self, c: int) -> None:
        if c in _SPACE:
            return
        if c == ord("}"):
            self.stack[-1] = _OBJECT_VALUE
            self._end_value(c)
            return
        self._begin_string(c)

    def _begin_string(self, c: int) -> None:
        if c in _SPACE:
            return
        if c != ord('"'):
            raise _invalid(c, "looking for beginning of object key string")
        self.step = self._in_string

    def _end_value(self, c: int) -> None:
        if not self.stack:
            self.step = self._end_top
            self.done = True
            self._end_top(c)
            return
        if c in _SPACE:
            self.step = self._end_value
            return
        top = self.stack[-1]
        if top == _OBJECT_KEY:
            if c != ord(":"):
                raise _invalid(c, "after object key")
            self.stack[-1] = _OBJECT_VALUE
            self.step = self._begin_value
        elif top == _OBJECT_VALUE:
            if c == ord(","):
                self.stack[-1] = _OBJECT_KEY
                self.step = self._begin_string
            elif c == ord("}"):
                self._pop()
            else:
                raise _invalid(c, "after object key:value pair")
        elif c == ord(","):
            self.step = self._begin_value
        elif c == ord("]"):
            self._pop()
        else:
            raise _invalid(c, "after array element")

    def _pop(self) -> None:
        self.stack.pop()
        self.step = self._end_value
        if not self.stack:
            self.step = self._end_top
            self.done = True

    def _end_top(self, c: int) -> None:
        if c not in _SPACE:
            raise _invalid(c, "after top-level value")

    # strings
    def _in_string(self, c: int) -> None:
        if c == ord('"'):
            self.step = self._end_value
        elif c == ord("\\"):
            self.step = self._in_escape
        elif c < 0x20:
            raise _invalid(c, "in string literal")

    def _in_escape(self, c: int) -> None:
        if c in _ESCAPES:
            self.step = self._in_string
        elif c == ord("u"):
            self.step = self._hex(4)
        else:
            raise _invalid(c, "in string escape code")

    def _hex(self, left: int) -> Step:
        def step(c: int) -> None:
            if c not in _HEX:
                raise _invalid(c, "in \\u hexadecimal character escape")
            self.step = self._in_string if left == 1 else self._hex(left - 1)

        return step

    # numbers
    def _neg(self, c: int) -> None:
        if c == ord("0"):
            self.step = self._zero
        elif c in _DIGITS:
            self.step = self._one
        else:
            raise _invalid(c, "in numeric literal")

    def _one(self, c: int) -> None:
        if c not in _DIGITS:
            self._zero(c)

    def _zero(self, c: int) -> None:
        if c == ord("."):
            self.step = self._dot
        elif c in b"eE":
            self.step = self._exponent
        else:
            self._end_value(c)

    def _dot(self, c: int) -> None:
        if c not in _DIGITS:
            raise _invalid(c, "after decimal point in numeric literal")
        self.step = self._dot_digits

    def _dot_digits(self, c: int) -> None:
        if c in b"eE":
            self.step = self._exponent
        elif c not in _DIGITS:
            self._end_value(c)

    def _exponent(self, c: int) -> None:
        if c in b"+-":
            self.step = self._exponent_sign
            return
        self._exponent_sign(c)

    def _exponent_sign(self, c: int) -> None:
        if c not in _DIGITS:
            raise _invalid(c, "in exponent of numeric literal")
        self.step = self._exponent_digits

    def _exponent_digits(self, c: int) -> None:
        if c not in _DIGITS:
            self._end_value(c)

    # literals
    def _literal(self, word: str, at: int) -> Step:
        def step(c: int) -> None:
            if c != ord(word[at]):
                raise _invalid(c, f"in literal {word} (expecting {quote_char(ord(word[at]))})")
            self.step = self._end_value if at + 1 == len(word) else self._literal(word, at + 1)

        return step


def syntax_error(data: bytes) -> str | None:
    """What Go's json.Unmarshal says of data that is not one JSON value (its
    checkValid), or None when it is."""
    scanner = _Scanner()
    try:
        for c in data:
            scanner.step(c)
        scanner.step(ord(" "))  # Go's eof: a space ends a number at the end
    except _SyntaxError as e:
        return str(e)
    return None if scanner.done else END_OF_INPUT


def type_name(value: Any) -> str:
    """The JSON type Go's UnmarshalTypeError names for a value it cannot store."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, str):
        return "string"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, list):
        return "array"
    return "object"
