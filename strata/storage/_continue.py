"""List continue tokens: kube's shape (base64url of {"v","rv","start"}) plus a
checksum, so a token that was edited or cut is refused with InvalidRequest
rather than read as some other position. The storage service and the cacher
share this module, so each accepts the other's tokens."""

from __future__ import annotations

import base64
import binascii
import hashlib
import posixpath

import orjson

from strata.storage._errors import InvalidRequest

VERSION = "meta.k8s.io/v1"
# rv of a token that continues at the newest revision (kube's inconsistent continue).
LATEST = -1


def _checksum(revision: int, start: str) -> str:
    return hashlib.sha256(f"{VERSION}|{revision}|{start}".encode()).hexdigest()[:16]


def encode(revision: int, start: str) -> str:
    """A token to resume a list at revision, from key start (relative to its prefix)."""
    body = {"v": VERSION, "rv": revision, "start": start, "h": _checksum(revision, start)}
    return base64.urlsafe_b64encode(orjson.dumps(body)).decode().rstrip("=")


def decode(prefix: str, token: str) -> tuple[int, str]:
    """(revision, start key relative to prefix) of a token, or InvalidRequest."""

    def bad(why: str) -> InvalidRequest:
        return InvalidRequest(prefix, f"continue key is not valid: {why}")

    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        body = orjson.loads(raw)
    except (binascii.Error, ValueError):
        raise bad("it is not an encoded continue token") from None
    if not isinstance(body, dict) or body.get("v") != VERSION:
        raise bad(f"expected version {VERSION}")
    revision, start = body.get("rv"), body.get("start")
    if not isinstance(revision, int) or isinstance(revision, bool):
        raise bad("incorrect encoded start resourceVersion")
    if revision == 0 or revision < LATEST:
        raise bad("incorrect encoded start resourceVersion (version meta.k8s.io/v1)")
    if not isinstance(start, str) or not start:
        raise bad("encoded start key empty")
    if body.get("h") != _checksum(revision, start):
        raise bad("checksum mismatch")
    # The start key must stay inside the listed prefix.
    cleaned = posixpath.normpath("/" + start.rstrip("\x00"))
    if cleaned.startswith("/..") or start.startswith("/"):
        raise bad("start key escapes the listed prefix")
    return revision, start
