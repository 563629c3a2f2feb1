"""Warnings a write earns without being refused (kube's WarningsOnCreate and
WarningsOnUpdate, and its unknown-field warnings): collected per request while
the registry handles it, and sent back for the gateway's `Warning` headers."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_collected: ContextVar[list[str] | None] = ContextVar("strata_registry_warnings", default=None)


def warn(message: str) -> None:
    """Add a warning to the request being handled (none is: it goes nowhere)."""
    collected = _collected.get()
    if collected is not None and message not in collected:
        collected.append(message)


@contextmanager
def collecting() -> Iterator[list[str]]:
    """The warnings given while the block runs."""
    collected: list[str] = []
    token = _collected.set(collected)
    try:
        yield collected
    finally:
        _collected.reset(token)
