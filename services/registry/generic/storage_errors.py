"""The storage contract's typed errors as Kubernetes Status (kube's
storage.InterpretCreateError and friends): the one place a storage error becomes
an API error. Nothing above the registry sees a storage error.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from services.registry.generic.declarations import Resource
from strata.api import errors
from strata.api.errors import StatusError
from strata.storage import (
    Conflict,
    CorruptObject,
    Expired,
    InvalidObject,
    InvalidRequest,
    KeyExists,
    KeyNotFound,
    ObjectTooLarge,
    StorageError,
    TooLargeResourceVersion,
    Unavailable,
)


def status_of(error: StorageError, resource: Resource, name: str = "") -> StatusError:
    """The Status a storage error answers for an object of resource named name
    (or none: a list's, a watch's)."""
    r = resource
    if isinstance(error, KeyNotFound):
        return errors.not_found(r.name, name, r.group)
    if isinstance(error, KeyExists):
        return errors.already_exists(r.name, name, r.group)
    if isinstance(error, Conflict):
        detail = error.message if "Precondition" in error.message else errors.OBJECT_MODIFIED
        return errors.conflict(r.name, name, detail, r.group)
    if isinstance(error, Expired):
        return errors.gone(error.message, error.continue_token)
    if isinstance(error, TooLargeResourceVersion):
        return errors.too_large_resource_version(error.message)
    if isinstance(error, ObjectTooLarge):
        return errors.too_large(error.message)
    if isinstance(error, InvalidObject | InvalidRequest):
        return errors.bad_request(error.message)
    if isinstance(error, CorruptObject):
        return errors.internal(f"cannot read {r.name} {name!r} ({error.key}): {error.message}")
    if isinstance(error, Unavailable):
        return errors.service_unavailable(f"storage is unavailable: {error.message}", 1)
    return errors.internal(error.message)


@contextmanager
def interpreted(resource: Resource, name: str = "") -> Iterator[None]:
    """A storage error raised inside, raised again as its Status."""
    try:
        yield
    except StorageError as e:
        raise status_of(e, resource, name) from None
