"""Base64 as kube's JSON decoder reads a []byte field (a Secret's data, a
ConfigMap's binaryData): Go's encoding/base64 StdEncoding. It skips line
breaks (\\r and \\n) anywhere, so PEM-style wrapped values decode; it wants the
padding; and a refusal names the input byte it stopped at, counting the line
breaks, in kube's words ("illegal base64 data at input byte N"). Python's
b64decode agrees on none of the three, hence this module.
"""

from __future__ import annotations

import binascii
import re

# Any byte outside the alphabet and line breaks: where a refusal can start.
_OUTSIDE = re.compile(rb"[^A-Za-z0-9+/\r\n]")
_ALPHABET = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
_BREAKS = frozenset(b"\r\n")
_PAD = ord("=")


class IllegalBase64(ValueError):
    """Go's base64.CorruptInputError."""

    def __init__(self, offset: int) -> None:
        super().__init__(f"illegal base64 data at input byte {offset}")
        self.offset = offset


def decode(text: str) -> bytes:
    """text's bytes as Go's base64.StdEncoding decodes them, or IllegalBase64."""
    data = text.encode()
    stripped = data.replace(b"\r", b"").replace(b"\n", b"")
    try:
        # Strict, what Go accepts once line breaks are out: whole quanta, the
        # last perhaps padded (the unused bits of padded ones are ignored).
        return binascii.a2b_base64(stripped, strict_mode=True)
    except binascii.Error:
        raise IllegalBase64(_refused_at(data)) from None


def normalized(text: str) -> str:
    """text as kube serves it back once decoded: canonical, on one line."""
    return binascii.b2a_base64(decode(text), newline=False).decode()


def _skip_breaks(src: bytes, si: int) -> int:
    while si < len(src) and src[si] in _BREAKS:
        si += 1
    return si


def _refused_at(src: bytes) -> int:
    """The offset Go's decoder reports for src, which it refuses: its
    decodeQuantum from the first quantum that is not whole (those before it
    decode, wherever their line breaks are)."""
    outside = _OUTSIDE.search(src)
    first = outside.start() if outside is not None else len(src)
    alphabet = first - src.count(b"\r", 0, first) - src.count(b"\n", 0, first)
    si, partial = first, alphabet % 4
    while partial:  # back to the start of the quantum cut short at first
        si -= 1
        if src[si] in _ALPHABET:
            partial -= 1
    n = len(src)
    j = 0  # the quantum's characters so far
    while True:
        if si == n:
            return si - j  # a quantum cut short (padding is required)
        c = src[si]
        si += 1
        if c in _ALPHABET:
            j += 1
            continue
        if c in _BREAKS:
            continue
        if c != _PAD or j < 2:
            return si - 1  # not base64, or padding too early
        if j == 2:  # a second "=" must follow, line breaks aside
            si = _skip_breaks(src, si)
            if si == n:
                return n
            if src[si] != _PAD:
                return si - 1
            si += 1
        return _skip_breaks(src, si)  # what follows the padding is refused
