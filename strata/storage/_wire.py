"""How typed storage errors cross gRPC: a status code plus the error's name in
trailing metadata, so GrpcStorage raises the same type the server raised."""

from __future__ import annotations

import grpc

from strata.storage._errors import ERROR_TYPES, StorageError, Unavailable

ERROR_METADATA_KEY = "strata-storage-error"

_CODES: dict[str, grpc.StatusCode] = {
    "KeyNotFound": grpc.StatusCode.NOT_FOUND,
    "KeyExists": grpc.StatusCode.ALREADY_EXISTS,
    "Conflict": grpc.StatusCode.ABORTED,
    "Expired": grpc.StatusCode.OUT_OF_RANGE,
    "TooLargeResourceVersion": grpc.StatusCode.DEADLINE_EXCEEDED,
    "Unavailable": grpc.StatusCode.UNAVAILABLE,
    "InvalidObject": grpc.StatusCode.INVALID_ARGUMENT,
}


async def abort(context: grpc.aio.ServicerContext[object, object], error: StorageError) -> None:
    """End the call with error's code and name (never returns)."""
    name = type(error).__name__
    context.set_trailing_metadata(((ERROR_METADATA_KEY, name), ("strata-storage-key", error.key)))
    await context.abort(_CODES.get(name, grpc.StatusCode.UNKNOWN), error.message)


def restore(error: grpc.aio.AioRpcError) -> StorageError:
    """The typed error a failed call stands for."""
    metadata = dict(error.trailing_metadata() or ())
    name = metadata.get(ERROR_METADATA_KEY)
    key = str(metadata.get("strata-storage-key", ""))
    cls = ERROR_TYPES.get(str(name)) if name else None
    if cls is not None:
        return cls(key, error.details() or "")
    if error.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
        return Unavailable(key, error.details() or str(error.code()))
    return StorageError(key, f"{error.code()}: {error.details()}")
