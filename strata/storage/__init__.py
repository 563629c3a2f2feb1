"""The storage contract: Protocol, options, typed errors, the gRPC client
adapter and guaranteed_update.

What every implementation of the contract shares (the storage service and the
cacher) is public here too, so no service reaches into a private module:
`requests` (the checks every implementation makes on a read, and compiled
predicates), `watch_stream` (Storage/WatchStream served for any
implementation), `continuation` (kube's list continue tokens), `wire_bytes`
(Pipeline results and watch frames written as wire bytes), and the typed
errors as they cross the wire (`abort`, `restore`, `from_failure`). What every
writer shares is public too: `envelopes` (an object's final bytes and the
envelope a write carries, so storage need not decode what it stores).
"""

from strata.storage._client import GrpcStorage, WatchStreamCall
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
from strata.storage._wire import SERVICE_NAME, abort, from_failure, restore

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
    "WatchStreamCall",
    "abort",
    "add_to_server",
    "check_preconditions",
    "from_failure",
    "guaranteed_update",
    "key_root",
    "resource_of",
    "resource_root",
    "restore",
]
