"""The storage contract: Protocol, options, typed errors, the gRPC client
adapter and guaranteed_update."""

from strata.storage._client import GrpcStorage
from strata.storage._errors import (
    Conflict,
    Expired,
    InvalidObject,
    KeyExists,
    KeyNotFound,
    StorageError,
    TooLargeResourceVersion,
    Unavailable,
)
from strata.storage._interface import (
    GetOptions,
    ListOptions,
    ListResult,
    Object,
    Preconditions,
    Storage,
    WatchEvent,
    WatchOptions,
)
from strata.storage._server import StorageServicer
from strata.storage._update import guaranteed_update
from strata.storage._wire import abort, restore

__all__ = [
    "Conflict",
    "Expired",
    "GetOptions",
    "GrpcStorage",
    "InvalidObject",
    "KeyExists",
    "KeyNotFound",
    "ListOptions",
    "ListResult",
    "Object",
    "Preconditions",
    "Storage",
    "StorageError",
    "StorageServicer",
    "TooLargeResourceVersion",
    "Unavailable",
    "WatchEvent",
    "WatchOptions",
    "abort",
    "guaranteed_update",
    "restore",
]
