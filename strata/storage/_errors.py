"""Storage errors: what went wrong in storage terms, knowing nothing of HTTP.

The registry interprets them into API Status; over gRPC they travel as status
codes plus the error's name so the client adapter restores the same type.
"""

from __future__ import annotations


class StorageError(Exception):
    """Base of every typed storage error."""

    def __init__(self, key: str = "", message: str = "") -> None:
        super().__init__(message or f"{type(self).__name__}: {key}")
        self.key = key
        self.message = message or str(self)


class KeyNotFound(StorageError):
    """No object is stored at the key."""


class KeyExists(StorageError):
    """Create found an object already stored at the key."""


class Conflict(StorageError):
    """A precondition (resourceVersion or uid) no longer holds."""


class Expired(StorageError):
    """The requested resourceVersion has been compacted or left the watch window."""


class TooLargeResourceVersion(StorageError):
    """The requested resourceVersion is newer than storage has reached."""


class Unavailable(StorageError):
    """The backing store could not be reached."""


class InvalidObject(StorageError):
    """The stored or supplied bytes are not an object storage can handle."""


ERROR_TYPES: dict[str, type[StorageError]] = {
    cls.__name__: cls
    for cls in (
        KeyNotFound,
        KeyExists,
        Conflict,
        Expired,
        TooLargeResourceVersion,
        Unavailable,
        InvalidObject,
    )
}
