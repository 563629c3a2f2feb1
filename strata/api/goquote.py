"""Go's strconv.Quote (and fmt's %q of a string), which kube uses to put a
value inside a message or a header: the API's words are compared exactly, so
the quoting must be Go's, not Python's repr or JSON's."""

from __future__ import annotations

_ESCAPES = {
    "\\": "\\\\",
    '"': '\\"',
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\v": "\\v",
}


def quote(text: str) -> str:
    """text as Go's strconv.Quote writes it: quotes and backslashes escaped,
    and whatever is not printable as an escape sequence."""
    out = []
    for c in text:
        if c in _ESCAPES:
            out.append(_ESCAPES[c])
        elif c.isprintable():
            out.append(c)
        elif ord(c) < 0x80:
            out.append(f"\\x{ord(c):02x}")
        elif ord(c) <= 0xFFFF:
            out.append(f"\\u{ord(c):04x}")
        else:
            out.append(f"\\U{ord(c):08x}")
    return '"' + "".join(out) + '"'
