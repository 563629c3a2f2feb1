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
    """The requested resourceVersion has been compacted or left the watch window.

    For a list continued past compaction, continue_token reads the rest at the
    newest revision (kube's "inconsistent continue").
    """

    def __init__(self, key: str = "", message: str = "", continue_token: str = "") -> None:
        super().__init__(key, message)
        self.continue_token = continue_token


class TooLargeResourceVersion(StorageError):
    """The requested resourceVersion is newer than storage has reached."""


class Unavailable(StorageError):
    """The backing store could not be reached."""


class InvalidObject(StorageError):
    """The supplied object cannot be stored as it is."""


class ObjectTooLarge(InvalidObject):
    """The object is larger than etcd accepts in one request."""


class InvalidRequest(StorageError):
    """The request's arguments are malformed (resourceVersion, limit, continue, selector)."""


class CorruptObject(StorageError):
    """A stored value cannot be read back (not JSON, or it cannot be decrypted)."""


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
        ObjectTooLarge,
        InvalidRequest,
        CorruptObject,
    )
}
