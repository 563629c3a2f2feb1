"""How typed storage errors cross gRPC: a status code plus the error's name in
trailing metadata, so GrpcStorage raises the same type the server raised."""

from __future__ import annotations

import grpc

from strata.proto.storage.v1 import storage_pb2
from strata.storage._errors import ERROR_TYPES, Expired, StorageError, Unavailable

# The service's full name: its RPC paths, and the health service name that says
# whether it can answer (for the cacher: whether every cache has synced).
SERVICE_NAME: str = storage_pb2.DESCRIPTOR.services_by_name["Storage"].full_name
ERROR_METADATA_KEY = "strata-storage-error"
KEY_METADATA_KEY = "strata-storage-key"
CONTINUE_METADATA_KEY = "strata-storage-continue"

_CODES: dict[str, grpc.StatusCode] = {
    "KeyNotFound": grpc.StatusCode.NOT_FOUND,
    "KeyExists": grpc.StatusCode.ALREADY_EXISTS,
    "Conflict": grpc.StatusCode.ABORTED,
    "Expired": grpc.StatusCode.OUT_OF_RANGE,
    "TooLargeResourceVersion": grpc.StatusCode.DEADLINE_EXCEEDED,
    "Unavailable": grpc.StatusCode.UNAVAILABLE,
    "InvalidObject": grpc.StatusCode.INVALID_ARGUMENT,
    "ObjectTooLarge": grpc.StatusCode.RESOURCE_EXHAUSTED,
    "InvalidRequest": grpc.StatusCode.INVALID_ARGUMENT,
    "CorruptObject": grpc.StatusCode.DATA_LOSS,
}


async def abort(context: grpc.aio.ServicerContext[object, object], error: StorageError) -> None:
    """End the call with error's code and name (never returns)."""
    name = type(error).__name__
    metadata = [(ERROR_METADATA_KEY, name), (KEY_METADATA_KEY, error.key)]
    if isinstance(error, Expired) and error.continue_token:
        metadata.append((CONTINUE_METADATA_KEY, error.continue_token))
    context.set_trailing_metadata(tuple(metadata))
    await context.abort(_CODES.get(name, grpc.StatusCode.UNKNOWN), error.message)


def restore(error: grpc.aio.AioRpcError) -> StorageError:
    """The typed error a failed call stands for."""
    metadata = {k: v for k, v in (error.trailing_metadata() or ()) if isinstance(v, str)}
    name = metadata.get(ERROR_METADATA_KEY)
    key = metadata.get(KEY_METADATA_KEY, "")
    message = error.details() or ""
    cls = ERROR_TYPES.get(name) if name else None
    if cls is Expired:
        return Expired(key, message, metadata.get(CONTINUE_METADATA_KEY, ""))
    if cls is not None:
        return cls(key, message)
    if error.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
        return Unavailable(key, message or str(error.code()))
    return StorageError(key, f"{error.code()}: {message}")


def failure(error: StorageError) -> storage_pb2.Failure:
    """error as a pipelined call reports it."""
    message = storage_pb2.Failure(error=type(error).__name__, message=error.message, key=error.key)
    if isinstance(error, Expired) and error.continue_token:
        setattr(message, "continue", error.continue_token)  # a Python keyword
    return message


def from_failure(message: storage_pb2.Failure) -> StorageError:
    cls = ERROR_TYPES.get(message.error, StorageError)
    if cls is Expired:
        return Expired(message.key, message.message, getattr(message, "continue"))
    return cls(message.key, message.message)
