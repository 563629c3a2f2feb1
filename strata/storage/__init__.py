"""The storage contract: Protocol, options, typed errors, the gRPC client
adapter and guaranteed_update."""

from strata.storage._client import GrpcStorage
from strata.storage._errors import (
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
from strata.storage._interface import (
    EXACT,
    NOT_OLDER_THAN,
    GetOptions,
    ListOptions,
    ListResult,
    Object,
    Preconditions,
    Predicate,
    Storage,
    WatchEvent,
    WatchOptions,
)
from strata.storage._keys import key_root, resource_of, resource_root
from strata.storage._server import StorageServicer, add_to_server
from strata.storage._update import check_preconditions, guaranteed_update
from strata.storage._wire import SERVICE_NAME, abort, restore

__all__ = [
    "EXACT",
    "NOT_OLDER_THAN",
    "SERVICE_NAME",
    "Conflict",
    "CorruptObject",
    "Expired",
    "GetOptions",
    "GrpcStorage",
    "InvalidObject",
    "InvalidRequest",
    "KeyExists",
    "KeyNotFound",
    "ListOptions",
    "ListResult",
    "Object",
    "ObjectTooLarge",
    "Preconditions",
    "Predicate",
    "Storage",
    "StorageError",
    "StorageServicer",
    "TooLargeResourceVersion",
    "Unavailable",
    "WatchEvent",
    "WatchOptions",
    "abort",
    "add_to_server",
    "check_preconditions",
    "guaranteed_update",
    "key_root",
    "resource_of",
    "resource_root",
    "restore",
]
