"""Warnings a write earns without being refused (kube's WarningsOnCreate and
WarningsOnUpdate), and what the request's fieldValidation makes of fields its
kind does not know: collected per request while the registry handles it, and
sent back for the gateway's `Warning` headers."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

from strata.api import errors

IGNORE, WARN, STRICT = "Ignore", "Warn", "Strict"


@dataclass
class _Request:
    field_validation: str
    given: list[str] = field(default_factory=list)


_current: ContextVar[_Request | None] = ContextVar("strata_registry_warnings", default=None)


def warn(message: str) -> None:
    """Add a warning to the request being handled (none is: it goes nowhere)."""
    request = _current.get()
    if request is not None and message not in request.given:
        request.given.append(message)


def validating() -> bool:
    """Whether the request's fieldValidation wants to hear of unknown and
    duplicate fields at all (looking for them costs a second parse)."""
    request = _current.get()
    return request is None or request.field_validation != IGNORE


def _under(path: str, parent: str) -> bool:
    return path == parent or path.startswith((f"{parent}.", f"{parent}["))


def undecoded_fields(kind: str, version: str, unknown: list[str], duplicate: list[str]) -> None:
    """Fields a body gave that its kind does not know (and that were dropped) or
    gave twice (the last one kept), as the request's fieldValidation wants them:
    nothing (Ignore), a warning each (Warn, kube's default), or kube's strict
    decoding error, a 400 (Strict). As in kube's typed decoder, a field both
    unknown and duplicated is reported as unknown only."""
    duplicate = [d for d in duplicate if not any(_under(d, u) for u in unknown)]
    problems = [f'unknown field "{p}"' for p in unknown]
    problems += [f'duplicate field "{p}"' for p in duplicate]
    if not problems:
        return
    request = _current.get()
    directive = request.field_validation if request is not None else WARN
    if directive == STRICT:
        raise errors.undecodable(kind, version, f"strict decoding error: {', '.join(problems)}")
    if directive == WARN:
        for problem in problems:
            warn(problem)


@contextmanager
def collecting(field_validation: str = WARN) -> Iterator[list[str]]:
    """The warnings given while the block runs ("" for fieldValidation is Warn)."""
    request = _Request(field_validation or WARN)
    token = _current.set(request)
    try:
        yield request.given
    finally:
        _current.reset(token)
