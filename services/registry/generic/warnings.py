"""Warnings a write earns without being refused (kube's WarningsOnCreate and
WarningsOnUpdate), and what the request's fieldValidation makes of fields its
kind does not know: collected per request while the registry handles it, and
sent back for the gateway's `Warning` headers."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

import orjson

from strata.api import errors, strict_decoding
from strata.api.errors import Cause

IGNORE, WARN, STRICT = "Ignore", "Warn", "Strict"
# How a YAML decoder's strict errors begin; each line after is one problem.
_YAML_PREFIXES = (
    "yaml: unmarshal errors:\n",
    "error converting YAML to JSON: yaml: unmarshal errors:\n",
)


@dataclass
class Decoding:
    """What the gateway knows of a request's body: the strict decoding errors
    it found in the body as sent (a YAML body's repeated keys, a patch's
    duplicate fields), whether the JSON the registry gets is its own making
    (converted from YAML, or a patch's result: kube finds unknown fields in
    key order there), and for a patch's result, what kube's 422 quotes as the
    patch (None: not a patch; "": the patched object itself)."""

    strict_errors: list[str] = field(default_factory=list)
    converted: bool = False
    patch: str | None = None


@dataclass
class _Request:
    field_validation: str
    decoding: Decoding
    given: list[str] = field(default_factory=list)


_current: ContextVar[_Request | None] = ContextVar("strata_registry_warnings", default=None)


def warn(message: str) -> None:
    """Add a warning to the request being handled (none is: it goes nowhere)."""
    request = _current.get()
    if request is not None and message not in request.given:
        request.given.append(message)


def _warnings(problem: str) -> list[str]:
    """A strict decoding error as kube warns of it: a YAML decoder's one per line."""
    for prefix in _YAML_PREFIXES:
        if problem.startswith(prefix):
            return [line.strip() for line in problem[len(prefix) :].split("\n")]
    return [problem]


def finds_duplicates() -> bool:
    """Whether the request's decoding looks for fields its body gives twice
    (fieldValidation is not Ignore, and the JSON is the client's own)."""
    request = _current.get()
    if request is None:
        return True
    return request.field_validation != IGNORE and not request.decoding.converted


def undecoded_fields(
    kind: str,
    version: str,
    body: bytes,
    unknown: list[str],
    *,
    typed: bool,
    keys: int | None = None,
) -> None:
    """What body gave that its kind does not know (dropped, at the paths in
    unknown) or gave twice (the last one kept), after what the gateway found
    in the body as sent, as the request's fieldValidation wants it: nothing
    (Ignore), a warning each (Warn, kube's default), or kube's strict decoding
    error (Strict): a 400, or for a patch a 422 on the field "patch". keys:
    strict_decoding.keys_in of the body as first decoded, when counted (the
    body is then read again only if it may give a field twice)."""
    request = _current.get()
    directive = request.field_validation if request is not None else WARN
    if directive == IGNORE:
        return
    decoding = request.decoding if request is not None else Decoding()
    if decoding.converted:
        own = [f'unknown field "{p}"' for p in sorted(unknown, key=strict_decoding.key_order)]
    else:
        own = strict_decoding.object_errors(body, unknown, typed=typed, keys=keys)
    problems = decoding.strict_errors + own
    if not problems:
        return
    if directive == STRICT:
        error = f"strict decoding error: {', '.join(problems)}"
        if decoding.patch is None:
            raise errors.undecodable(kind, version, error)
        quoted = orjson.dumps(decoding.patch or body.decode(errors="replace")).decode()
        cause = Cause(
            reason="FieldValueInvalid", message=f"Invalid value: {quoted}: {error}", field="patch"
        )
        raise errors.invalid("", "", [cause])
    for problem in problems:
        for warning in _warnings(problem):
            warn(warning)


@contextmanager
def collecting(
    field_validation: str = WARN, decoding: Decoding | None = None
) -> Iterator[list[str]]:
    """The warnings given while the block runs ("" for fieldValidation is Warn)."""
    request = _Request(field_validation or WARN, decoding or Decoding())
    token = _current.set(request)
    try:
        yield request.given
    finally:
        _current.reset(token)
