"""JSON as Go's encoding/json writes it, which is how kube writes every body and
every complex value inside a message: orjson's bytes with Go's HTML-safe
escapes (<, > and &) and the line and paragraph separators escaped, map keys
sorted. Clients compare these bytes, so the gateway's bodies and the field
errors' messages share this one definition."""

from __future__ import annotations

import orjson

# What Go escapes in strings that orjson writes as they are. Outside strings
# JSON has none of these bytes, so replacing the bytes is exact.
_HTML = ((b"<", b"\\u003c"), (b">", b"\\u003e"), (b"&", b"\\u0026"))
# U+2028 and U+2029 share their first UTF-8 byte: a one-byte search (memchr, a
# quarter of a two-byte search's time) rules both out for almost every body.
_SEPARATOR_LEAD = b"\xe2"
_SEPARATORS = (("\u2028".encode(), b"\\u2028"), ("\u2029".encode(), b"\\u2029"))


def escaped(body: bytes) -> bytes:
    """orjson's JSON as Go's encoder writes the same value. Each search is a
    memchr-speed `in`; a body with none of the characters is returned as it is."""
    for raw, replacement in _HTML:
        if raw in body:
            body = body.replace(raw, replacement)
    if _SEPARATOR_LEAD in body:
        for raw, replacement in _SEPARATORS:
            body = body.replace(raw, replacement)
    return body


def marshal(value: object) -> str:
    """json.Marshal(value) for a Go map, slice or string: map keys sorted, Go's escapes."""
    return escaped(orjson.dumps(value, option=orjson.OPT_SORT_KEYS)).decode()
