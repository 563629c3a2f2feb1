"""List continue tokens, as kube writes and reads them (k8s.io/apiserver's
storage.EncodeContinue/DecodeContinue): base64url without padding of
{"v":"meta.k8s.io/v1","rv":N,"start":"/<key after the prefix>"}.

kube takes any token of that shape: an edited one lists from where it says, a
negative rv continues at the newest revision (its "inconsistent continue"),
and only a start key that would leave the listed prefix is refused. A refusal
is InvalidRequest in kube's words, Go's base64 and JSON errors included. The
storage service and the cacher share this module, so each accepts the
other's tokens (and kube's)."""

from __future__ import annotations

import base64
from typing import Any

import orjson

from strata.api import gojson
from strata.storage._errors import InvalidRequest

VERSION = "meta.k8s.io/v1"
# rv of a token that continues at the newest revision (kube's inconsistent continue).
LATEST = -1
_ALPHABET = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
_BREAKS = frozenset(b"\r\n")
# The Go type a token is decoded into, as Go's errors name it.
_TYPE = "storage.continueToken"
_FIELDS = {"v": "string", "rv": "int64", "start": "string"}
_INT64 = (-(2**63), 2**63)


def encode(revision: int, start: str) -> str:
    """A token to resume a list at revision, from key start (relative to its prefix)."""
    body = {"v": VERSION, "rv": revision, "start": "/" + start}
    return base64.urlsafe_b64encode(orjson.dumps(body)).decode().rstrip("=")


def _go_base64(token: str) -> bytes:
    """token as Go's base64.RawURLEncoding decodes it: line breaks skipped, no
    padding; a refusal names the input byte as Go's CorruptInputError does."""
    data = token.encode()
    quantum = 0
    for at, c in enumerate(data):
        if c in _ALPHABET:
            quantum = (quantum + 1) % 4
        elif c not in _BREAKS:
            raise ValueError(f"illegal base64 data at input byte {at}")
    if quantum == 1:  # one character cannot make a byte
        raise ValueError(f"illegal base64 data at input byte {len(data) - 1}")
    stripped = data.replace(b"\r", b"").replace(b"\n", b"")
    return base64.urlsafe_b64decode(stripped + b"=" * (-len(stripped) % 4))


def _unmarshal(raw: bytes) -> dict[str, Any]:
    """The token's fields as Go's json.Unmarshal fills its struct (keys matched
    without regard to case, null leaving a field alone), or its first error."""
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError as e:
        # Go's words (its scanner, a Python pass: only for a token refused).
        raise ValueError(gojson.syntax_error(raw) or str(e)) from None
    if body is None:
        return {}
    if not isinstance(body, dict):
        kind = gojson.type_name(body)
        raise ValueError(f"json: cannot unmarshal {kind} into Go value of type {_TYPE}")
    fields: dict[str, Any] = {}
    first: str | None = None
    for key, value in body.items():
        name = key if key in _FIELDS else key.lower()
        if name not in _FIELDS or value is None:
            continue
        go_type = _FIELDS[name]
        if go_type == "string" and isinstance(value, str):
            fields[name] = value
            continue
        if go_type == "int64" and type(value) is int and _INT64[0] <= value < _INT64[1]:
            fields[name] = value
            continue
        shown = gojson.type_name(value)
        if shown == "number" and go_type == "int64":
            shown = f"number {value}"
        first = first or (
            f"json: cannot unmarshal {shown} into Go struct field continueToken.{name} "
            f"of type {go_type}"
        )
    if first is not None:
        raise ValueError(first)
    return fields


def _clean(path: str) -> str:
    """A rooted path as Go's path.Clean makes it."""
    parts: list[str] = []
    for part in path.split("/"):
        if part == "..":
            if parts:
                parts.pop()
        elif part and part != ".":
            parts.append(part)
    return "/" + "/".join(parts)


def decode(prefix: str, token: str) -> tuple[int, str]:
    """(revision, start key relative to prefix) of a token, or InvalidRequest."""

    def bad(why: str) -> InvalidRequest:
        return InvalidRequest(prefix, f"invalid continue token: continue key is not valid: {why}")

    try:
        fields = _unmarshal(_go_base64(token))
    except ValueError as e:
        raise bad(str(e)) from None
    version = fields.get("v", "")
    if version != VERSION:
        raise bad(f"server does not recognize this encoded version {version}")
    revision, start = fields.get("rv", 0), fields.get("start", "")
    if revision == 0:
        raise bad(f"incorrect encoded start resourceVersion (version {VERSION})")
    if not start:
        raise bad(f"encoded start key empty (version {VERSION})")
    # Cleaned, the key may not change: so it cannot climb out of the prefix.
    rooted = start if start.startswith("/") else "/" + start
    if _clean(rooted) != rooted:
        raise bad(start)
    return max(revision, LATEST), rooted[1:]
